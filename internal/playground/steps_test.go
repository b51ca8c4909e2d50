package playground

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/tags"
)

// held is a check that holds at once.
func held(context.Context) (string, error) { return "fine", nil }

func runSteps(t *testing.T, ctx context.Context, timeout time.Duration, steps ...Step) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := newRunner(newTimeline(&out, time.Now()), timeout, nil).run(ctx, steps)
	return out.String(), err
}

func TestFailingCheckNamesTheStepAndWhy(t *testing.T) {
	thirdRan := false
	out, err := runSteps(t, context.Background(), 200*time.Millisecond,
		Step{Name: "first", Check: held},
		Step{Name: "label → scale set", Check: func(context.Context) (string, error) {
			return "", errors.New("aks-pool has tags {env=dev}, want owner=team-a")
		}},
		Step{Name: "third", Action: func(context.Context) error { thirdRan = true; return nil }, Check: held},
	)
	var se *StepError
	if !errors.As(err, &se) {
		t.Fatalf("run returned %v, want a *StepError", err)
	}
	if se.Index != 2 || se.Total != 3 || se.Name != "label → scale set" || !se.TimedOut {
		t.Errorf("StepError = %+v, want step 2/3 %q, timed out", se, "label → scale set")
	}
	for _, want := range []string{`demo step 2/3 "label → scale set" failed`, "did not hold within", "want owner=team-a"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	for _, want := range []string{"✓ first (", "\n           fine\n", "✗ label → scale set (not converged after 2", "want owner=team-a"} {
		if !strings.Contains(out, want) {
			t.Errorf("timeline does not contain %q:\n%s", want, out)
		}
	}
	if thirdRan || strings.Contains(out, "third") {
		t.Errorf("a step after the failed one ran:\n%s", out)
	}
}

func TestFailingActionFailsAtOnce(t *testing.T) {
	checked := false
	start := time.Now()
	_, err := runSteps(t, context.Background(), time.Minute, Step{
		Name:   "portal edit → labels",
		Action: func(context.Context) error { return errors.New("armsim: ResourceNotFound") },
		Check:  func(context.Context) (string, error) { checked = true; return "", nil },
	})
	var se *StepError
	if !errors.As(err, &se) || se.TimedOut || se.Name != "portal edit → labels" {
		t.Fatalf("run returned %v, want a non-timeout *StepError for the step", err)
	}
	if checked || time.Since(start) > 10*time.Second {
		t.Errorf("the check ran (%t) or the runner waited (%s) after a failed action", checked, time.Since(start))
	}
	if !strings.Contains(err.Error(), "ResourceNotFound") {
		t.Errorf("error %q lost the action's cause", err)
	}
}

func TestPermanentCheckErrorFailsBeforeTheTimeout(t *testing.T) {
	start := time.Now()
	_, err := runSteps(t, context.Background(), time.Minute, Step{
		Name: "node-pool reconcile wipe",
		Check: func(context.Context) (string, error) {
			return "", permanent(errors.New("label azure.tags/env=prod vanished"))
		},
	})
	var se *StepError
	if !errors.As(err, &se) || se.TimedOut || !strings.Contains(err.Error(), "vanished") {
		t.Fatalf("run returned %v, want a non-timeout *StepError with the check's error", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("a permanent failure waited %s", time.Since(start))
	}
}

func TestCancelledContextStopsTheCheck(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("the controller manager stopped")
	time.AfterFunc(100*time.Millisecond, func() { cancel(cause) })
	_, err := runSteps(t, ctx, time.Minute, Step{
		Name:  "initial sync",
		Check: func(context.Context) (string, error) { return "", errors.New("not yet") },
	})
	var se *StepError
	if !errors.As(err, &se) || !errors.Is(err, cause) || se.TimedOut {
		t.Fatalf("run returned %v, want a *StepError caused by %v", err, cause)
	}
}

func TestAllStepsHeld(t *testing.T) {
	out, err := runSteps(t, context.Background(), time.Second, Step{Name: "a", Check: held}, Step{Name: "b", Check: held})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "all 2 steps held") {
		t.Errorf("timeline lacks the summary:\n%s", out)
	}
}

// offlinePlayground is a playground with its estate laid out in an armsim
// that serves nothing, and nothing else started: enough to build the
// scenario's steps.
func offlinePlayground(t *testing.T) *playground {
	t.Helper()
	sim, err := armsim.New(armsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	l := newLayout()
	if err := l.seedCloud(sim); err != nil {
		t.Fatal(err)
	}
	return &playground{layout: l, codec: tags.Codec{Prefix: tags.DefaultPrefix, Rules: &azure.TagRules}}
}

func TestScenarioEndsWithTheLabelSyncAct(t *testing.T) {
	steps := scenario(offlinePlayground(t))
	var names []string
	for _, s := range steps {
		if s.Name == "" || s.Check == nil {
			t.Errorf("step %q has no name or no check", s.Name)
		}
		names = append(names, s.Name)
	}
	want := []string{"labelsync: host label → its Node", "labelsync: Node edit reverted"}
	if got := names[len(names)-len(want):]; !slices.Equal(got, want) {
		t.Errorf("the scenario ends with %q, want the labelsync act %q", got, want)
	}
	if i := slices.Index(names, "initial sync"); i != 0 {
		t.Errorf("the scenario starts with %q, want the initial sync first (it starts the controller)", names[0])
	}
}

func TestLabelSyncActWithoutItsCRDsFailsAtOnce(t *testing.T) {
	pg := offlinePlayground(t)
	_, pg.metalErr = findModule(context.Background(), t.TempDir(), capiModule) // no go.mod: go list fails
	if pg.metalErr == nil {
		t.Fatal("findModule found a module outside any Go module")
	}
	steps := scenario(pg)
	for _, s := range steps[len(steps)-2:] {
		start := time.Now()
		_, err := runSteps(t, context.Background(), time.Minute, s)
		var se *StepError
		if !errors.As(err, &se) || se.TimedOut || !strings.Contains(err.Error(), capiModule) {
			t.Errorf("step %q without the CRDs returned %v, want a non-timeout *StepError naming %s", s.Name, err, capiModule)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("step %q waited %s for CRDs that cannot come", s.Name, time.Since(start))
		}
	}
}

func TestFindModuleSaysWhatIsMissingWithoutDownloading(t *testing.T) {
	repo, err := repoDir("")
	if err != nil {
		t.Fatal(err)
	}
	m, err := findModule(context.Background(), repo, capiModule)
	if err != nil || !isFile(filepath.Join(m.Dir, filepath.FromSlash(capiCRDFiles[0]))) {
		t.Fatalf("findModule in the repository = %+v, %v; want the module with its CRDs", m, err)
	}
	// An empty module cache: nothing is downloaded (GOPROXY=off), the
	// error says what to run.
	t.Setenv("GOMODCACHE", t.TempDir())
	start := time.Now()
	_, err = findModule(context.Background(), repo, capiModule)
	if err == nil || !strings.Contains(err.Error(), "go mod download "+capiModule) {
		t.Fatalf("findModule with an empty module cache: %v, want an error saying to run go mod download", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("findModule took %s with nothing to find", time.Since(start))
	}
	paths, _, err := labelSyncCRDs(context.Background(), t.TempDir())
	if err == nil || paths != nil {
		t.Errorf("labelSyncCRDs outside the repository = %v, %v; want an error", paths, err)
	}
}
