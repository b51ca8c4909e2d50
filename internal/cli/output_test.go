package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/tagsync/tagsync/internal/version"
)

// runVerbs runs args under a root command with every verb that has -o.
func runVerbs(args ...string) (string, string, error) {
	verbs := []*cobra.Command{NewVersionCommand(), NewStatusCommand(), NewPlanCommand(), NewValidateCommand(), NewTagsCommand(), NewCleanupCommand()}
	return runWith(context.Background(), verbs, args...)
}

// outputVerbs are the verbs with -o, as typed.
var outputVerbs = [][]string{{"version"}, {"status"}, {"plan"}, {"validate"}, {"tags", "add"}, {"cleanup"}}

// TestEveryVerbTakesTheSameOutputNames: every verb with -o completes
// table, json and yaml, and refuses any other name with exit code 2 and an
// error listing them, before it reads anything.
func TestEveryVerbTakesTheSameOutputNames(t *testing.T) {
	for _, verb := range outputVerbs {
		name := strings.Join(verb, " ")
		out, _, err := runVerbs(append(append([]string{cobra.ShellCompRequestCmd}, verb...), "-o", "")...)
		if err != nil || !strings.HasPrefix(out, "table\njson\nyaml\n") {
			t.Errorf("%s: -o completes %q (%v), want table, json, yaml", name, out, err)
		}
		_, _, err = runVerbs(append(verb, "-o", "wide")...)
		if ExitCode(err) != ExitUsage || err == nil || !strings.Contains(err.Error(), `unknown output format "wide": use table, json, yaml`) {
			t.Errorf("%s -o wide: %v (exit %d), want exit %d naming table, json, yaml", name, err, ExitCode(err), ExitUsage)
		}
	}
}

// TestVersionAsData: version -o json and -o yaml print the fields of the
// version line.
func TestVersionAsData(t *testing.T) {
	want := version.Read()
	for _, format := range []string{"json", "yaml"} {
		out, _, err := runVerbs("version", "-o", format)
		if err != nil {
			t.Fatalf("-o %s: %v", format, err)
		}
		var got version.Info
		if format == "json" {
			err = json.Unmarshal([]byte(out), &got)
		} else {
			err = yaml.UnmarshalStrict([]byte(out), &got)
		}
		if err != nil || got != want {
			t.Errorf("version -o %s: %+v (%v), want %+v:\n%s", format, got, err, want, out)
		}
	}
}
