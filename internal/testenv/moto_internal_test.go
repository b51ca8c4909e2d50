package testenv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindMotoServer: the repository's bin/moto wins over PATH, PATH is the
// fallback, and neither is an error that says to run make tools.
func TestFindMotoServer(t *testing.T) {
	onPath := func(string) (string, error) { return "/usr/local/bin/moto_server", nil }
	notOnPath := func(string) (string, error) { return "", exec.ErrNotFound }

	root := t.TempDir()
	if got, err := findMotoServer(root, onPath); err != nil || got != "/usr/local/bin/moto_server" {
		t.Fatalf("without bin/moto: %q, %v; want the one on PATH", got, err)
	}
	_, err := findMotoServer(root, notOnPath)
	if err == nil || !strings.Contains(err.Error(), "make tools") || !strings.Contains(err.Error(), "make moto") {
		t.Fatalf("with no moto_server anywhere: err = %v, want one saying to run make tools (or make moto)", err)
	}

	local := filepath.Join(root, "bin", "moto", "bin", "moto_server")
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(local, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := findMotoServer(root, onPath); err != nil || got != local {
		t.Fatalf("with bin/moto: %q, %v; want %s", got, err, local)
	}
}

// TestMotoStartFailsWithOutput: a moto_server that exits at once is an error
// that carries its output, not a wait until the start deadline.
func TestMotoStartFailsWithOutput(t *testing.T) {
	script := filepath.Join(t.TempDir(), "moto_server")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'No module named moto' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := &Moto{cmd: exec.Command(script), out: &SyncBuffer{}, exited: make(chan struct{})}
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	if err := startProcess(m.cmd, m.exited); err != nil {
		t.Fatal(err)
	}
	err := m.await(script)
	if err == nil || !strings.Contains(err.Error(), "exited before it answered") || !strings.Contains(err.Error(), "No module named moto") {
		t.Fatalf("await = %v, want an error naming the early exit and carrying the output", err)
	}
	if err := m.Stop(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
}
