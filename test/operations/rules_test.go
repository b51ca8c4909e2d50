package operations_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tagsync/tagsync/internal/testenv"
)

// TestAlertRulesUnitTests runs the alerts' unit tests
// (testdata/rules_test.yaml, Prometheus's rule test format) with bin/promtool
// (`make tools`; $PROMTOOL names another one; missing is a failure, never
// a skip), and checks every
// alert has a test and a runbook entry in docs/operations.md.
func TestAlertRulesUnitTests(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		promtool = filepath.Join(root, "bin", "promtool")
	}
	if _, err := os.Stat(promtool); err != nil {
		t.Fatalf("bin/promtool is missing (%v): run `make tools`", err)
	}
	tests := filepath.Join("testdata", "rules_test.yaml")
	out, err := exec.Command(promtool, "test", "rules", tests).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", tests, err, out)
	}
	rules := readText(t, filepath.Join(root, "charts", "tagsync", "files", "prometheusrules.yaml"))
	testText := readText(t, tests)
	runbook := readText(t, filepath.Join(root, "docs", "operations.md"))
	for _, line := range strings.Split(rules, "\n") {
		alert, ok := strings.CutPrefix(strings.TrimSpace(line), "- alert: ")
		if !ok {
			continue
		}
		if !strings.Contains(testText, "alertname: "+alert+"\n") {
			t.Errorf("alert %s has no unit test in %s", alert, tests)
		}
		if !strings.Contains(runbook, "### "+alert+"\n") {
			t.Errorf("alert %s has no runbook entry (### %s) in docs/operations.md", alert, alert)
		}
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
