package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoPluginPackageLinked guards the controller's memory: a dependency that
// imports Go's plugin package (kustomize does, through cli-runtime's
// genericclioptions and resource packages) forces external linking and adds
// ~50 MiB of resident binary to every `tagsync run`, which the memory goal of
// docs/performance.md cannot afford.
func TestNoPluginPackageLinked(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "plugin" || strings.HasPrefix(pkg, "sigs.k8s.io/kustomize/") {
			t.Errorf("tagsync links %s: find the import that brings it in (go mod why -m) and avoid it", pkg)
		}
	}
}
