package testenv

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// ModuleDir returns the directory of a Go module the repository requires,
// as `go list -m` finds it (in the module cache, downloading it if needed),
// so tests can install CRDs a dependency ships, at the version go.mod
// requires: for example ModuleDir("sigs.k8s.io/cluster-api") +
// "/core/config/crd/bases/cluster.x-k8s.io_machines.yaml" as an
// Options.ExtraCRDDirs entry.
func ModuleDir(module string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding module %s (go list -m): %w: %s", module, err, strings.TrimSpace(stderr.String()))
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("module %s is not downloaded and go list -m gave no directory: run go mod download %s", module, module)
	}
	return dir, nil
}
