package e2e_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// chartDir is the chart under test.
func chartDir() string { return filepath.Join(kube.RootDir, "charts", "tagsync") }

// helmBinary is bin/helm, built by `make tools`. A missing helm fails the
// test: the chart checks are part of `make test`, never skipped.
func helmBinary(t testing.TB) string {
	t.Helper()
	p := filepath.Join(kube.RootDir, "bin", "helm")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("bin/helm is missing (%v): run `make tools` (or `make test`, which builds it) so the chart can be rendered", err)
	}
	return p
}

// helm runs bin/helm with args and returns its standard output.
func helm(t testing.TB, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Dir = kube.RootDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// renderChart runs `helm template` for release "tagsync" in namespace with
// the extra helm flags (--values, --set) and returns the objects the
// cluster holds once the install has finished: the release's objects and
// what the chart's objects Job applies after the rollout (its NodeTagSync),
// without the hooks themselves (renderChartHooks).
func renderChart(t testing.TB, namespace string, flags ...string) []*unstructured.Unstructured {
	t.Helper()
	release, hooks := splitHooks(renderAll(t, namespace, flags...))
	return append(release, chartJobObjects(t, hooks)...)
}

// renderChartHooks is renderChart's hooks: the objects Job, its
// ServiceAccount and RBAC.
func renderChartHooks(t testing.TB, namespace string, flags ...string) []*unstructured.Unstructured {
	t.Helper()
	_, hooks := splitHooks(renderAll(t, namespace, flags...))
	return hooks
}

// renderAll runs `helm template` and decodes what it prints.
func renderAll(t testing.TB, namespace string, flags ...string) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"template", "tagsync", chartDir(), "--namespace", namespace}, flags...)
	objs, err := decodeObjects(helm(t, args...))
	if err != nil {
		t.Fatalf("decoding `helm %v`: %v", args, err)
	}
	return objs
}

// splitHooks separates Helm hooks (annotated helm.sh/hook) from the rest.
func splitHooks(objs []*unstructured.Unstructured) (release, hooks []*unstructured.Unstructured) {
	for _, o := range objs {
		if o.GetAnnotations()["helm.sh/hook"] != "" {
			hooks = append(hooks, o)
		} else {
			release = append(release, o)
		}
	}
	return release, hooks
}

// ofKind returns the objects of a kind.
func ofKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// oneOfKind returns the single object of a kind.
func oneOfKind(t testing.TB, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	found := ofKind(objs, kind)
	if len(found) != 1 {
		t.Fatalf("the rendered chart has %d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

// managerServiceAccount returns the manager's ServiceAccount: the one the
// Deployment runs as (the chart may render another, the metrics
// scraper's).
func managerServiceAccount(t testing.TB, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	name := deployment(t, objs).Spec.Template.Spec.ServiceAccountName
	for _, o := range ofKind(objs, "ServiceAccount") {
		if o.GetName() == name {
			return o
		}
	}
	t.Fatalf("the Deployment's ServiceAccount %q is not rendered", name)
	return nil
}
