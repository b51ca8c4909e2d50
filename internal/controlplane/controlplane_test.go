package controlplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAssetsDirNamesWhatIsMissingAndWhatToDo(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	root := t.TempDir()
	_, err := AssetsDir("", root, "run `make tools`")
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver") || !strings.Contains(err.Error(), filepath.Join(root, "bin", "k8s")) ||
		!strings.HasSuffix(err.Error(), "run `make tools`") {
		t.Fatalf("error %v, want it to name kube-apiserver, bin/k8s and the hint", err)
	}
	dir := filepath.Join(root, "bin", "k8s")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := AssetsDir("", root, ""); err != nil || got != dir {
		t.Fatalf("AssetsDir = %q, %v; want %s", got, err, dir)
	}
	if _, err := crdPaths(Options{RepoDir: root, ExtraCRDDirs: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "relative to the repository root") {
		t.Fatalf("a missing extra CRD path gave %v", err)
	}
}
