package infratags_test

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/controller/infratags"
	"github.com/tagsync/tagsync/internal/tags/tagstest"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestShippingSchema: OpenShift as shipped keeps the user tags in the
// Infrastructure's immutable status. They reach every resource carrying
// the owned tag and the untagged resources of the cluster's resource group
// named after the cluster; a DNS zone at its 15-tag limit fails alone and
// is reported in an event; the status is never written.
func TestShippingSchema(t *testing.T) {
	t.Parallel()
	h := newHarness(t, shippingCRD(t))
	const infraID = "ship-1a2b3"
	e := h.estate(infraID)
	legacy, err := h.az.Server.CreateResource(sub, e.ResourceGroup, armsim.Resource{Type: armsim.TypeDisk, Name: infraID + "-legacy-disk"})
	if err != nil {
		t.Fatal(err)
	}
	zone := e.ID(sub, armsim.TypeDNSZone, 0)
	if err := h.az.Server.SetTags(zone, tagstest.Numbered("x", 14)); err != nil {
		t.Fatal(err)
	}
	h.infrastructure(map[string]any{}, map[string]any{
		"infrastructureName": infraID,
		"platformStatus": map[string]any{"type": "Azure", "azure": map[string]any{
			"resourceGroupName": e.ResourceGroup, "resourceTags": tagList("env", "prod", "team", "a")}},
	})
	ok := []string{legacy}
	for _, id := range append(e.ResourceIDs(), e.GroupIDs()...) {
		if id != zone {
			ok = append(ok, id)
		}
	}
	h.waitTags(ok, map[string]string{"env": "prod", "team": "a"})
	note := h.waitEvent(infratags.ReasonUserTagsFailed, "failed on 1")
	if !strings.Contains(note, path.Base(zone)+" (OverLimit)") {
		t.Errorf("the event does not name the failing zone: %s", note)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(infratags.InfrastructureGVK)
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: infratags.InfrastructureName}, u); err != nil {
		t.Fatal(err)
	}
	tags, _, _ := unstructured.NestedSlice(u.Object, "status", "platformStatus", "azure", "resourceTags")
	if len(tags) != 2 {
		t.Errorf("the shipping status was rewritten: %v", tags)
	}
	az := &v1alpha1.AzureMetadata{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: namespace, Name: infratags.AzureMetadataName}, az); err != nil {
		t.Fatal(err)
	}
	if az.Labels["app.kubernetes.io/managed-by"] != "tagsync-infratags" || az.Annotations["tagsync.io/source"] == "" || az.Spec.Opcode != v1alpha1.OpcodeUpdate ||
		len(az.OwnerReferences) != 0 {
		t.Errorf("engine object %+v", az.ObjectMeta)
	}
}

// TestSeedSchema: with the proposal's schema the tags come from the spec;
// a Day 2 change propagates and a removed key stays on the resources; an
// outside edit is reverted; failures are listed as {name, error} in the
// Infrastructure's status.
func TestSeedSchema(t *testing.T) {
	t.Parallel()
	h := newHarness(t, seedCRD)
	const infraID = "seed-4c5d6"
	e := h.estate(infraID)
	ids := append(e.ResourceIDs(), e.GroupIDs()...)
	zone := e.ID(sub, armsim.TypeDNSZone, 0)
	others := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != zone {
			others = append(others, id)
		}
	}
	if err := h.az.Server.SetTags(zone, tagstest.Numbered("x", 14)); err != nil {
		t.Fatal(err)
	}
	infra := h.infrastructure(map[string]any{"platformSpec": map[string]any{"azure": map[string]any{
		"resourceTags": tagList("env", "prod", "team", "a")}}},
		map[string]any{"infrastructureName": infraID, "platformStatus": map[string]any{"azure": map[string]any{"resourceGroupName": e.ResourceGroup}}})
	h.waitTags(others, map[string]string{"env": "prod", "team": "a"})
	eventually(t, "the failing zone listed in the Infrastructure's status", func() string {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(infratags.InfrastructureGVK)
		if err := h.c.Get(h.ctx, client.ObjectKey{Name: infratags.InfrastructureName}, u); err != nil {
			return err.Error()
		}
		items, _, _ := unstructured.NestedSlice(u.Object, "status", "platformStatus", "azure", "resourceTags")
		if len(items) != 1 {
			return fmt.Sprintf("status lists %v", items)
		}
		m := items[0].(map[string]any)
		if !strings.EqualFold(fmt.Sprint(m["name"]), zone) || !strings.Contains(fmt.Sprint(m["error"]), "OverLimit") {
			return fmt.Sprintf("status lists %v", items)
		}
		return ""
	})

	// Day 2: team changes, env is removed from the list (released: it stays).
	if err := h.c.Get(h.ctx, client.ObjectKeyFromObject(infra), infra); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(infra.Object, tagList("team", "b"), "spec", "platformSpec", "azure", "resourceTags"); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Update(h.ctx, infra); err != nil {
		t.Fatal(err)
	}
	h.waitTags(others, map[string]string{"team": "b", "env": "prod"})

	// An outside edit of a managed key is reverted by the engine's next pass.
	disk := e.ID(sub, armsim.TypeDisk, 0)
	if err := h.az.Server.SetTags(disk, map[string]string{"team": "hacked"}); err != nil {
		t.Fatal(err)
	}
	cm := &v1alpha1.CloudMetadata{}
	cm.Namespace, cm.Name = namespace, infratags.CloudMetadataName
	testenv.RequestPass(t, h.c, cm, "tagsync.io/sync-requested", testenv.LastSyncRequest, waitFor)
	h.waitTags([]string{disk}, map[string]string{"team": "b"})
}

// TestInvalidUserTagsApplyNothing: a set the installer refuses (too many,
// a bad key, a reserved prefix, keys equal but for case) applies nothing and
// is reported with every reason at once.
func TestInvalidUserTagsApplyNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, seedCRD)
	const infraID = "bad-7e8f9"
	h.estate(infraID)
	// The proposal's CRD checks only the syntax of keys and values (and at
	// most 10 items); these pass it but not the installer's rules: a
	// reserved prefix, keys equal but for case, a key ending in '-', the
	// restricted key "name".
	kv := []string{"azure-thing", "x", "Env", "a", "env", "b", "bad-", "x", "name", "x", "ok", "fine"}
	h.infrastructure(map[string]any{"platformSpec": map[string]any{"azure": map[string]any{"resourceTags": tagList(kv...)}}},
		map[string]any{"infrastructureName": infraID})
	note := h.waitEvent(infratags.ReasonInvalidUserTags, "azure-thing", "Env", "bad-", `"name"`)
	if strings.Contains(note, `"ok"`) {
		t.Errorf("a valid key is reported: %s", note)
	}
	if n := h.az.Server.Calls().Count("Tags.UpdateAtScope"); n != 0 {
		t.Errorf("%d writes from an invalid set", n)
	}
	az := &v1alpha1.AzureMetadata{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: namespace, Name: infratags.AzureMetadataName}, az); err == nil {
		t.Errorf("an engine object was written for an invalid set: %+v", az.Spec)
	}
}

// TestCRDAppearsLater: the adapter waits for the Infrastructure CRD and
// starts when it is installed.
func TestCRDAppearsLater(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const infraID = "late-0a1b2"
	e := h.estate(infraID)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(h.kube.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, seedCRD)}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Infrastructure kind served", func() string {
		if _, err := h.c.RESTMapper().RESTMapping(schema.GroupKind{Group: "config.openshift.io", Kind: "Infrastructure"}, "v1"); err != nil {
			return err.Error()
		}
		return ""
	})
	h.infrastructure(map[string]any{"platformSpec": map[string]any{"azure": map[string]any{"resourceTags": tagList("env", "late")}}},
		map[string]any{"infrastructureName": infraID})
	h.waitTags(e.ResourceIDs(), map[string]string{"env": "late"})
}

// TestEngineWriteRetried: on OpenShift as shipped the Infrastructure never
// changes again, so a failed write of the engine objects (here: their
// namespace is not there yet) must be retried by the adapter itself. It
// reports one EngineWriteFailed warning however often it retries, and
// writes the objects once the namespace exists, the Infrastructure
// untouched. Not parallel: it counts the adapter's reconcile errors in the
// process-wide metrics.
func TestEngineWriteRetried(t *testing.T) {
	h := startWithoutNamespace(t, nil, []string{shippingCRD(t)})
	const infraID = "wait-3c4d5"
	e := h.estate(infraID)
	failures := func() float64 {
		return testenv.Counter(t, "controller_runtime_reconcile_errors_total", map[string]string{"controller": infratags.ControllerName})
	}
	before := failures()
	infra := h.infrastructure(map[string]any{}, map[string]any{
		"infrastructureName": infraID,
		"platformStatus": map[string]any{"type": "Azure", "azure": map[string]any{
			"resourceGroupName": e.ResourceGroup, "resourceTags": tagList("env", "late")}},
	})
	h.waitEvent(infratags.ReasonEngineWriteFailed, `namespaces "`+namespace+`" not found`)
	// A pass returns the error (not a requeue), so the workqueue retries it
	// with its backoff: a second reconciler on the same objects, called
	// directly.
	r := infratags.NewReconciler(h.c, events.NewFakeRecorder(100), infratags.Options{Namespace: namespace})
	testenv.Reconcile(h.ctx, t, r, client.ObjectKey{Name: infratags.InfrastructureName}).Failed(`namespaces "` + namespace + `" not found`)
	const retries = 6
	eventually(t, "the failed write retried", func() string {
		if n := failures() - before; n < retries {
			return fmt.Sprintf("%v failed passes", n)
		}
		return ""
	})
	h.createNamespace()
	h.waitTags(e.ResourceIDs(), map[string]string{"env": "late"})

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(infratags.InfrastructureGVK)
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: infratags.InfrastructureName}, u); err != nil {
		t.Fatal(err)
	}
	if u.GetResourceVersion() != infra.GetResourceVersion() {
		t.Errorf("the Infrastructure was changed: resourceVersion %s, then %s", infra.GetResourceVersion(), u.GetResourceVersion())
	}
	var list eventsv1.EventList
	if err := h.c.List(h.ctx, &list); err != nil {
		t.Fatal(err)
	}
	for _, ev := range list.Items {
		if ev.Reason != infratags.ReasonEngineWriteFailed {
			continue
		}
		// Once per distinct failure, not once per retry. A pass that does
		// not meet the failure ends it, so a later recurrence is reported
		// anew; under load the passes around the namespace's creation may
		// do that once.
		if ev.Series != nil && ev.Series.Count > 2 {
			t.Errorf("the warning was sent %d times over at least %d failed passes: %s", ev.Series.Count, retries, ev.Note)
		}
	}
}
