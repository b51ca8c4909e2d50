package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fieldOwner is the server-side-apply field manager of these tests.
const fieldOwner = client.FieldOwner("tagsync-e2e")

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
// the extra helm flags (--values, --set) and decodes what it prints.
func renderChart(t testing.TB, namespace string, flags ...string) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"template", "tagsync", chartDir(), "--namespace", namespace}, flags...)
	objs, err := decodeObjects(helm(t, args...))
	if err != nil {
		t.Fatalf("decoding `helm %v`: %v", args, err)
	}
	return objs
}

// decodeObjects splits a multi-document YAML stream into objects, skipping
// empty documents.
func decodeObjects(b []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// readObjects decodes a YAML file of the repository.
func readObjects(t testing.TB, rel string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kube.RootDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(b)
	if err != nil {
		t.Fatalf("decoding %s: %v", rel, err)
	}
	return objs
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

// apply server-side-applies objects as the cluster admin, with strict field
// validation (an unknown or misspelt field is an error).
func apply(ctx context.Context, t testing.TB, objs []*unstructured.Unstructured, opts ...client.ApplyOption) {
	t.Helper()
	for _, o := range objs {
		if err := applyOne(ctx, o, opts...); err != nil {
			t.Fatal(err)
		}
	}
}

func applyOne(ctx context.Context, o *unstructured.Unstructured, opts ...client.ApplyOption) error {
	o = o.DeepCopy()
	o.SetResourceVersion("")
	all := append([]client.ApplyOption{fieldOwner, client.ForceOwnership}, opts...)
	if err := kube.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), all...); err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
	}
	return nil
}
