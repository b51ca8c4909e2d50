package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubectlPluginName: the binary run through a symlink named
// kubectl-tagsync (what make install-plugin and krew install) introduces
// itself as "kubectl tagsync", and has the operator verbs.
func TestKubectlPluginName(t *testing.T) {
	link := filepath.Join(t.TempDir(), "kubectl-tagsync")
	if err := os.Symlink(os.Args[0], link); err != nil {
		t.Fatal(err)
	}
	q := startAs(t, link, nil, "--help")
	if code := q.wait(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	out := q.out.String()
	for _, want := range []string{"kubectl tagsync [command]", "status", "tags", "validate", "completion"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl-tagsync --help lacks %q:\n%s", want, out)
		}
	}
}

// TestCompletionScripts: tagsync completion bash|zsh|fish prints cobra's
// script for each shell.
func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_tagsync", "zsh": "#compdef tagsync", "fish": "complete -c tagsync"} {
		p := start(t, nil, "completion", shell)
		if code := p.wait(t); code != 0 {
			t.Fatalf("%s: exit code %d", shell, code)
		}
		if out := p.out.String(); !strings.Contains(out, want) {
			t.Errorf("completion %s lacks %q:\n%.300s", shell, want, out)
		}
	}
}

// TestUnknownCommandsExitTwo: an unknown verb, at the top or under a verb
// that groups others, is a usage error (exit code 2) naming it; the group
// alone prints its help (exit code 0).
func TestUnknownCommandsExitTwo(t *testing.T) {
	for _, args := range [][]string{{"frobnicate"}, {"tags", "frobnicate"}, {"completion", "frobnicate"}, {"help", "frobnicate"}} {
		p := start(t, nil, args...)
		if code := p.wait(t); code != 2 {
			t.Errorf("tagsync %s: exit code %d, want 2", strings.Join(args, " "), code)
		}
		if out := p.out.String(); !strings.Contains(out, `tagsync: unknown command "frobnicate"`) || strings.Contains(out, "Usage:") {
			t.Errorf("tagsync %s: want one error naming the verb, no help:\n%s", strings.Join(args, " "), out)
		}
	}
	for _, args := range [][]string{{}, {"tags"}} {
		p := start(t, nil, args...)
		if code := p.wait(t); code != 0 || !strings.Contains(p.out.String(), "Available Commands:") {
			t.Errorf("tagsync %s: exit code %d, want 0 and the help:\n%s", strings.Join(args, " "), code, p.out.String())
		}
	}
}
