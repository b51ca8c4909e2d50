package v1alpha1_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv"
)

// providerColumns are the printer columns that say which cloud (or which
// requests) a kind's object works on. A LabelSyncProfile has none: its
// source is always Metal3 BareMetalHosts.
var providerColumns = map[string][]string{
	"NodeTagSync":       {"Provider"},
	"CloudMetadata":     {"Azure", "AWS"},
	"AzureMetadata":     {"CloudMetadata"},
	"AWSMetadata":       {"CloudMetadata"},
	"LabelSyncProfile":  nil,
	"WorkloadTagPolicy": {"Provider"},
}

// TestKubectlGetTagsyncListsEveryKind: the API server's discovery puts
// every tagsync kind in the category tagsync (so `kubectl get tagsync`
// lists them all) with a short name, and each kind's CRD prints its
// provider, Ready, at least one count and when it last synced.
func TestKubectlGetTagsyncListsEveryKind(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The kinds: every type of the group with a list type beside it.
	var kinds []string
	known := kube.Scheme.KnownTypes(v1alpha1.GroupVersion)
	for kind := range known {
		if _, ok := known[kind+"List"]; ok {
			kinds = append(kinds, kind)
		}
	}
	slices.Sort(kinds)
	if len(kinds) != len(providerColumns) {
		t.Fatalf("tagsync.io/v1alpha1 has the kinds %v; providerColumns names %d: add the new kind there", kinds, len(providerColumns))
	}
	served := map[string]metav1.APIResource{} // by kind
	testenv.Eventually(t, 10*time.Second, "discovery to serve every tagsync kind", func() string {
		list, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
		if err != nil {
			return err.Error()
		}
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") {
				served[r.Kind] = r
			}
		}
		if len(served) < len(kinds) {
			return fmt.Sprintf("discovery serves %d of the kinds %v", len(served), kinds)
		}
		return ""
	})
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			r := served[kind]
			if !slices.Contains(r.Categories, "tagsync") {
				t.Errorf("categories %v lack tagsync: kubectl get tagsync leaves %s out", r.Categories, kind)
			}
			if len(r.ShortNames) == 0 {
				t.Errorf("no short name")
			}
			checkPrinterColumns(t, kind, r.Name)
		})
	}
}

// checkPrinterColumns checks the CRD of kind prints its provider columns,
// Ready (the condition's status), an integer count and a date column Last
// Sync from its status.
func checkPrinterColumns(t *testing.T, kind, plural string) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := kube.Client.Get(context.Background(), client.ObjectKey{Name: plural + "." + v1alpha1.GroupVersion.Group}, crd); err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if len(versions) != 1 {
		t.Fatalf("%d versions, want 1", len(versions))
	}
	cols, _, _ := unstructured.NestedSlice(versions[0].(map[string]any), "additionalPrinterColumns")
	byName := map[string]map[string]any{}
	var names []string
	counts := 0
	for _, c := range cols {
		m := c.(map[string]any)
		name, _ := m["name"].(string)
		byName[name] = m
		names = append(names, name)
		if m["type"] == "integer" && strings.HasPrefix(m["jsonPath"].(string), ".status.") {
			counts++
		}
	}
	for _, want := range providerColumns[kind] {
		if byName[want] == nil {
			t.Errorf("no column %s (the provider) in %v", want, names)
		}
	}
	if c := byName["Ready"]; c == nil || c["jsonPath"] != `.status.conditions[?(@.type=="Ready")].status` {
		t.Errorf("column Ready %v, want the Ready condition's status (columns %v)", c, names)
	}
	if counts == 0 {
		t.Errorf("no count column (an integer from the status) in %v", names)
	}
	if c := byName["Last Sync"]; c == nil || c["type"] != "date" || !strings.HasPrefix(c["jsonPath"].(string), ".status.") {
		t.Errorf("column Last Sync %v, want a date from the status (columns %v)", c, names)
	}
}
