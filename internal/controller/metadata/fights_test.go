package metadata_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/cloudchangetest"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestAFightStopsAfterThreePutBacks: another writer (a policy's modify
// effect, say) removes an owned tag from a resource each time the request
// puts it back, and its Event Grid changes name it. The request puts it
// back 3 times, then stops: no more writes however often it is removed;
// the resource's failure says Fighting and names the writer; the other
// resources stay in sync.
func TestAFightStopsAfterThreePutBacks(t *testing.T) {
	h, hub, _ := newEventsHarness(t)
	ids := h.applied("fight")
	id := ids[0]
	base := h.writes()
	strip := func(i int) {
		t.Helper()
		if err := h.az.Server.DeleteTags(id, "env"); err != nil {
			t.Fatal(err)
		}
		c := cloudchangetest.Write("azure", id, fmt.Sprintf("strip-%d", i), nil)
		c.Writer = cloudchange.Writer{ID: "policy-modify-env"}
		if err := cloudchangetest.Publish(t, hub, waitFor, c); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 3; i++ {
		strip(i)
		if got := h.tags(id)["env"]; got != "prod" {
			t.Fatalf("put-back %d: env=%q, want prod", i, got)
		}
	}
	if n := h.writes() - base; n != 3 {
		t.Errorf("%d writes for 3 put-backs, want 3", n)
	}
	for i := 4; i <= 6; i++ {
		strip(i)
	}
	if got, ok := h.tags(id)["env"]; ok {
		t.Errorf("env=%q put back a fourth time", got)
	}
	if n := h.writes() - base; n != 3 {
		t.Errorf("%d writes after 6 removals, want still 3", n)
	}
	az := h.azureStatus("fight-tags")
	var found bool
	for _, f := range az.Status.Failures {
		if f.Resource == id && f.Reason == metadata.ReasonFighting && strings.Contains(f.Message, "policy-modify-env") {
			found = true
		}
	}
	if !found {
		t.Errorf("no Fighting failure naming the writer on %s: %+v", id, az.Status.Failures)
	}
	if c := h.waitReady("fight", metav1.ConditionFalse); c.Status.InSync != c.Status.Matched-1 {
		t.Errorf("in sync %d of %d, want all but the fought-over resource", c.Status.InSync, c.Status.Matched)
	}
	if g := testenv.Counter(t, "tagsync_metadata_fights", map[string]string{"namespace": h.ns, "cloudmetadata": "fight"}); g != 1 {
		t.Errorf("fights gauge %v, want 1", g)
	}
}

// fightingFailure returns the Fighting failure of id in the AzureMetadata
// named name, or nil.
func fightingFailure(h *harness, name, id string) *v1alpha1.ResourceFailure {
	for _, f := range h.azureStatus(name).Status.Failures {
		if f.Resource == id && f.Reason == metadata.ReasonFighting {
			return &f
		}
	}
	return nil
}

// TestAPolicyOnTheWritePathStopsAfterOneWrite: Azure Policy's modify
// effect sets env=policy on every write of a resource. Someone removes
// env; the put-back's own answer carries env=policy, so the request stops
// writing env there after that one write, not three put-backs, and the
// failure says what changed it. Counting put-backs alone stopped it after
// 3 writes and named no one: the modified write is the request's own, so
// no event names the policy.
func TestAPolicyOnTheWritePathStopsAfterOneWrite(t *testing.T) {
	h, hub, _ := newEventsHarness(t)
	id := h.applied("policy-fight")[0]
	if err := h.az.Server.AddPolicy(armsim.Policy{Name: t.Name(), Scope: id, Effect: armsim.PolicyModify,
		Tags: map[string]string{"env": "policy"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.az.Server.RemoveActor(t.Name()) })
	base := h.writes()
	// The first removal's put-back comes back with the policy's value; a
	// full pass right after (the search does not show the write yet) must
	// not take env as put back.
	if err := h.az.Server.DeleteTags(id, "env"); err != nil {
		t.Fatal(err)
	}
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", id, "removed-0", nil)); err != nil {
		t.Fatal(err)
	}
	if cm := h.pass("policy-fight"); cm.Status.InSync != cm.Status.Matched-1 {
		t.Errorf("a full pass after the overridden write: %d of %d in sync, want all but the resource", cm.Status.InSync, cm.Status.Matched)
	}
	for i := 1; i <= 3; i++ {
		if err := h.az.Server.DeleteTags(id, "env"); err != nil {
			t.Fatal(err)
		}
		if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", id, fmt.Sprintf("removed-%d", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.writes() - base; n != 1 {
		t.Errorf("%d writes, want the one whose answer showed the policy", n)
	}
	if got, ok := h.tags(id)["env"]; ok {
		t.Errorf("env=%q written again", got)
	}
	if f := fightingFailure(h, "policy-fight-tags", id); f == nil || !strings.Contains(f.Message, "Azure Policy's modify") {
		t.Errorf("no Fighting failure saying the write's answer carried the policy's value: %+v", f)
	}
}

// TestAReconcilerIsStoppedAndNamedFromItsEvents: a platform reconciler
// (as AKS's) rewrites a resource's tags to its declared set after every
// other write, as its own application; armsim's Event Grid delivers its
// events to tagsync's webhook. One outside removal of env starts the
// fight: the request puts env back 3 times, each undone by the
// reconciler, then stops, its failure naming the reconciler's application
// from the events' claims. (The full pass that reports a new fight used to
// find nothing: the search index still showed the request's last write,
// which it trusted, so the stop went unreported until the next resync.)
func TestAReconcilerIsStoppedAndNamedFromItsEvents(t *testing.T) {
	h, g := newEventGridHarness(t, cloudchange.HubOptions{ResyncInterval: 2 * time.Hour, HealthEvery: 20 * time.Millisecond})
	id := h.applied("reconciler-fight")[0]
	g.Subscribe(t, h.az)
	declared := h.tags(id)
	delete(declared, "env")
	const aks = "7319c514-987d-4e9b-ac3d-d38c4f427f4c"
	if err := h.az.Server.AddReconciler(armsim.Reconciler{Name: t.Name(), Scope: id, Tags: declared, AppID: aks}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.az.Server.RemoveActor(t.Name()) })
	h.az.Server.ResetCalls()
	base := h.writes()
	if err := h.az.Server.DeleteTags(id, "env"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a Fighting failure naming the reconciler", func() string {
		if f := fightingFailure(h, "reconciler-fight-tags", id); f == nil || !strings.Contains(f.Message, aks) {
			return fmt.Sprintf("failure %+v after %d writes; tags %v", f, h.writes()-base, h.tags(id))
		}
		return ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.az.Server.WaitEventGridIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := h.writes() - base; n != 3 {
		t.Errorf("%d writes before the request stopped, want 3 put-backs", n)
	}
	if got, ok := h.tags(id)["env"]; ok {
		t.Errorf("env=%q: the reconciler's declared set must stand", got)
	}
}
