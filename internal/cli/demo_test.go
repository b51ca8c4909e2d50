package cli

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/tagsync/tagsync/internal/playground"
)

// executeDemo runs `tagsync demo args...` with the playground replaced by
// fake, returning the options it got and the command's error.
func executeDemo(t *testing.T, fake func(context.Context, playground.Options) error, args ...string) (playground.Options, error) {
	t.Helper()
	var got playground.Options
	orig := runPlayground
	t.Cleanup(func() { runPlayground = orig })
	runPlayground = func(ctx context.Context, o playground.Options) error {
		got = o
		return fake(ctx, o)
	}
	err := executeTo(context.Background(), io.Discard, io.Discard, []*cobra.Command{NewDemoCommand()}, append([]string{"demo"}, args...)...)
	return got, err
}

func TestDemoFailedStepIsAnErrorNamingTheStep(t *testing.T) {
	step := &playground.StepError{Index: 3, Total: 8, Name: "label → scale set", After: 30 * time.Second, TimedOut: true,
		Err: errors.New("aks-nodepool1-38290713-vmss has tags {env=prod}, want owner=team-a")}
	_, err := executeDemo(t, func(context.Context, playground.Options) error { return step })
	if err == nil {
		t.Fatal("a failed step did not make the command fail (main turns the error into exit status 1)")
	}
	for _, want := range []string{`"label → scale set"`, "want owner=team-a"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestDemoFlags(t *testing.T) {
	o, err := executeDemo(t, func(context.Context, playground.Options) error { return nil },
		"--keep", "--timeout", "45s", "-v")
	if err != nil {
		t.Fatal(err)
	}
	if !o.Keep || o.StepTimeout != 45*time.Second || !o.Verbose || o.Out == nil || o.LogOut == nil {
		t.Errorf("options = %+v, want keep, 45s timeout, verbose and both writers", o)
	}
	o, err = executeDemo(t, func(context.Context, playground.Options) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if o.Keep || o.Verbose || o.StepTimeout != playground.DefaultStepTimeout {
		t.Errorf("default options = %+v, want no keep, quiet, %s per step", o, playground.DefaultStepTimeout)
	}
}

func TestDemoRejectsATinyTimeout(t *testing.T) {
	ran := false
	_, err := executeDemo(t, func(context.Context, playground.Options) error { ran = true; return nil }, "--timeout", "10ms")
	if err == nil || ran || !strings.Contains(err.Error(), "--timeout") {
		t.Fatalf("--timeout 10ms: err %v, playground ran %t; want a --timeout error before anything starts", err, ran)
	}
}
