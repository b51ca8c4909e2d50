package testenv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tagsyncv1alpha1 "github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv"
)

// widgetCRDs holds a CRD of "another project" (Widget), relative to the
// repository root as Options.ExtraCRDDirs takes it.
const widgetCRDs = "internal/testenv/testdata/crds"

var widgetGVK = schema.GroupVersionKind{Group: "testenv.example.com", Version: "v1", Kind: "Widget"}

// TestPairIndependent starts two control planes in one process: both serve
// tagsync's CRDs and the extra ones, and what is created in one is absent
// from the other.
func TestPairIndependent(t *testing.T) {
	start := time.Now()
	a, b := testenv.StartPair(t, testenv.Options{ExtraCRDDirs: []string{widgetCRDs}})
	t.Logf("two control planes started in %s", time.Since(start).Round(time.Millisecond))
	if a.Config.Host == b.Config.Host {
		t.Fatalf("both control planes are at %s", a.Config.Host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for name, env := range map[string]*testenv.Env{"a": a, "b": b} {
		if err := env.Client.List(ctx, &tagsyncv1alpha1.NodeTagSyncList{}); err != nil {
			t.Fatalf("plane %s does not serve NodeTagSyncs: %v", name, err)
		}
		if err := env.Client.List(ctx, widgetList(), client.InNamespace("default")); err != nil {
			t.Fatalf("plane %s does not serve the extra CRD's Widgets: %v", name, err)
		}
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "only-in-a", Namespace: "default"}}
	if err := a.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	w := widgetObject()
	w.SetName("only-in-a")
	w.SetNamespace("default")
	if err := a.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{&corev1.ConfigMap{}, widgetObject()} {
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(cm), obj); err != nil {
			t.Fatalf("plane a lost its %T: %v", obj, err)
		}
		err := b.Client.Get(ctx, client.ObjectKeyFromObject(cm), obj)
		if !apierrors.IsNotFound(err) {
			t.Fatalf("getting a's %T from plane b: err = %v, want NotFound", obj, err)
		}
	}
}

// TestExtraCRDPathMissing: a missing extra CRD path fails before anything
// starts, naming the path and how it is read. (TestCRDsInstalled shows that a
// plane without options serves no extra CRDs.)
func TestExtraCRDPathMissing(t *testing.T) {
	_, err := testenv.NewWith(testenv.Options{ExtraCRDDirs: []string{"test/no-such-crds"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-crds") || !strings.Contains(err.Error(), "relative to the repository root") {
		t.Fatalf("NewWith with a missing CRD path: err = %v, want one naming the path and how it is resolved", err)
	}
}

func widgetObject() *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	return w
}

func widgetList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(widgetGVK.GroupVersion().WithKind("WidgetList"))
	return l
}
