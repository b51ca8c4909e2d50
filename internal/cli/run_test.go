package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// runArgs runs `tagsync run` with args and returns its error.
func runArgs(t *testing.T, args ...string) error {
	t.Helper()
	root := NewRootCommand()
	root.AddCommand(NewRunCommand())
	root.SetArgs(append([]string{"run"}, args...))
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	return root.ExecuteContext(t.Context())
}

func TestRunRejectsIncompleteAzureAuth(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {token: t}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AZURE_TENANT_ID", "")
	t.Setenv("AZURE_CLIENT_ID", "")
	t.Setenv("AZURE_CLIENT_SECRET", "")
	err := runArgs(t, "--kubeconfig", kubeconfig, "--azure-auth-mode", "client-secret", "--azure-client-id", "app")
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "tenant") {
		t.Fatalf("error = %v, want one naming the missing tenant", err)
	}
}

func TestRunRejectsMissingKubeconfig(t *testing.T) {
	err := runArgs(t, "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	if err == nil || !strings.Contains(err.Error(), "Kubernetes client config") {
		t.Fatalf("error = %v, want one about the client config", err)
	}
}

func TestRunCaFileMustHoldPEM(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(file, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := httpClientTrusting(file); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("error = %v, want one saying the file holds no PEM certificate", err)
	}
}

func TestMemoryLimitFlag(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	if err := applyMemoryLimit("lots"); err == nil || !strings.Contains(err.Error(), "positive quantity") {
		t.Fatalf("error = %v, want one asking for a quantity", err)
	}
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	if err := applyMemoryLimit("120Mi"); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 120<<20 {
		t.Fatalf("memory limit = %d, want %d", got, 120<<20)
	}
}
