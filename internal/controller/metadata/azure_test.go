package metadata_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/tags/tagstest"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestAzureLifecycle walks one request through its life on a cluster's
// estate: add (every classified resource of every type, the group too, and
// nothing else), an outside edit reverted, an outside tag left alone, a
// steady pass that writes nothing, a key released, then delete; the audit
// log holds exactly the mutations.
func TestAzureLifecycle(t *testing.T) {
	h, e, ids := newEstateHarness(t, "life", 1)
	stray, err := h.az.Server.CreateResource(sub, "rg-life", armsim.Resource{Type: armsim.TypeDisk, Name: "unclassified"})
	if err != nil {
		t.Fatal(err)
	}
	h.azureMetadata("cluster-tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod", "team": "a"})
	h.cloudMetadata("cluster", "cluster-tags", "", map[string]string{classifierOf("life"): "owned"})

	cm := h.waitReady("cluster", metav1.ConditionTrue)
	if int(cm.Status.Matched) != len(ids) || int(cm.Status.InSync) != len(ids) {
		t.Fatalf("matched %d, in sync %d; want %d", cm.Status.Matched, cm.Status.InSync, len(ids))
	}
	for _, id := range ids {
		if tg := h.tags(id); tg["env"] != "prod" || tg["team"] != "a" {
			t.Errorf("%s has %v", id, tg)
		}
	}
	if tg := h.tags(stray); len(tg) != 0 {
		t.Errorf("the unclassified disk got %v", tg)
	}
	if recs := h.auditRecords(); len(recs) != len(ids) {
		t.Errorf("%d audit records, want one per resource (%d)", len(recs), len(ids))
	}
	checkPendingFirst(t, h.auditLines())
	st := h.azureStatus("cluster-tags")
	if st.Status.ResourceTags["env"] != "prod" || st.Status.CloudMetadata != "cluster" {
		t.Errorf("status %+v", st.Status)
	}

	// An outside edit of an owned tag is reverted; another writer's tag stays.
	disk := e.ID(sub, armsim.TypeDisk, 0)
	nic := e.ID(sub, armsim.TypeNetworkInterface, 0)
	h.setTags(disk, map[string]string{"env": "hacked"})
	h.setTags(nic, map[string]string{"owner": "someone"})
	h.indexed(disk, nic) // no event announces the edits: a pass sees them once Resource Graph does
	h.pass("cluster")
	if got := h.tags(disk)["env"]; got != "prod" {
		t.Errorf("outside edit not reverted: env=%q", got)
	}
	if got := h.tags(nic)["owner"]; got != "someone" {
		t.Errorf("another writer's tag was touched: owner=%q", got)
	}

	// A pass over an estate in sync writes nothing.
	before := h.writes()
	h.pass("cluster")
	if n := h.writes() - before; n != 0 {
		t.Errorf("a steady pass wrote %d times", n)
	}

	// A key removed from the request is released: left on the resources.
	az := h.azureStatus("cluster-tags")
	h.update(az, func() { az.Spec.ResourceTags = map[string]string{"env": "prod"} })
	h.waitServed("cluster-tags")
	testenvEventuallyActive(t, h, "cluster-tags", map[string]string{"env": "prod"})
	if got := h.tags(disk)["team"]; got != "a" {
		t.Errorf("released key team was removed: %v", h.tags(disk))
	}

	// Delete removes the tag everywhere, and says so in the audit log.
	h.update(az, func() {
		az.Spec.Opcode, az.Spec.ResourceTags = v1alpha1.OpcodeDelete, map[string]string{"env": ""}
	})
	approveDeletions(t, h, "cluster") // env leaves every resource: a person approves
	h.waitServed("cluster-tags")
	h.waitReady("cluster", metav1.ConditionTrue)
	for _, id := range ids {
		if v, ok := h.tags(id)["env"]; ok {
			t.Errorf("%s still has env=%s", id, v)
		}
	}
	deletes := 0
	for _, r := range h.auditRecords() {
		if r.Deleted["env"] != "" {
			deletes++
			if r.Object.Kind != "AzureMetadata" || r.Object.Name != "cluster-tags" || r.Result != audit.ResultOK {
				t.Errorf("delete record %+v", r)
			}
		}
	}
	if deletes != len(ids) {
		t.Errorf("%d delete records, want %d", deletes, len(ids))
	}
}

// testenvEventuallyActive waits until the AzureMetadata's active tag list
// is want.
func testenvEventuallyActive(t *testing.T, h *harness, name string, want map[string]string) {
	t.Helper()
	eventually(t, "active tag list "+fmt.Sprint(want), func() string {
		got := h.azureStatus(name).Status.ResourceTags
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Sprintf("active list %v", got)
		}
		return ""
	})
}

// TestAddOntoAnotherValue: add does not overwrite a value it did not
// write; that key fails on that resource only, and is reported.
func TestAddOntoAnotherValue(t *testing.T) {
	h := newHarness(t)
	e := h.estate("taken", 1)
	disk := e.ID(sub, armsim.TypeDisk, 0)
	h.seedTags(map[string]string{"env": "dev"}, disk)
	h.azureMetadata("tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod", "team": "a"})
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("taken"): "owned"})
	cm := h.waitReady("cm", metav1.ConditionFalse)
	if cm.Status.Failed != 1 {
		t.Errorf("failed = %d, want 1", cm.Status.Failed)
	}
	if ts := lastSuccess(t, h, "cm"); ts != 0 {
		t.Errorf("last success %v after a partial pass, want none", ts)
	}
	if tg := h.tags(disk); tg["env"] != "dev" || tg["team"] != "a" {
		t.Errorf("disk tags %v: want env=dev kept and team=a added", tg)
	}
	st := h.azureStatus("tags").Status
	if len(st.Failures) != 1 || st.Failures[0].Reason != metadata.ReasonTagTaken || !strings.EqualFold(st.Failures[0].Resource, disk) {
		t.Errorf("failures %+v", st.Failures)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionApplied); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Applied = %+v", c)
	}
}

// TestIgnoreTags: an ignored tag is neither written nor overwritten.
func TestIgnoreTags(t *testing.T) {
	h := newHarness(t)
	e := h.estate("ign", 1)
	disk := e.ID(sub, armsim.TypeDisk, 0)
	h.seedTags(map[string]string{"cost-center": "policy-set"}, disk)
	h.azureMetadata("tags", v1alpha1.OpcodeUpdate, map[string]string{"env": "prod"}, "cost-center")
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("ign"): "owned"})
	h.waitReady("cm", metav1.ConditionTrue)
	if tg := h.tags(disk); tg["cost-center"] != "policy-set" || tg["env"] != "prod" {
		t.Errorf("disk tags %v", tg)
	}
	if ts := lastSuccess(t, h, "cm"); ts < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last success %v after an ok pass, want about now", ts)
	}
}

// lastSuccess reads a CloudMetadata's last-success timestamp gauge (0:
// none).
func lastSuccess(t *testing.T, h *harness, name string) float64 {
	t.Helper()
	return testenv.Counter(t, "tagsync_metadata_last_success_timestamp_seconds", map[string]string{"namespace": h.ns, "cloudmetadata": name})
}

// TestLimitPolicy: at the 15-tag limit of DNS zones and the 50 of disks,
// PARTIAL adds new tags in name order while there is room and STRICT adds
// none to a resource that cannot take them all.
func TestLimitPolicy(t *testing.T) {
	t.Parallel()
	for _, limit := range []v1alpha1.LimitPolicy{v1alpha1.LimitPartial, v1alpha1.LimitStrict} {
		t.Run(string(limit), func(t *testing.T) {
			h := newHarness(t)
			infra := strings.ToLower(strings.TrimPrefix(string(limit), "POLICY_APPLY_"))
			e := h.estate(infra, 1)
			zone, disk := e.ID(sub, armsim.TypeDNSZone, 0), e.ID(sub, armsim.TypeDisk, 0)
			fill(t, h, zone, 12) // classifier + 12 = 13 of 15
			fill(t, h, disk, 47) // classifier + 47 = 48 of 50
			h.indexed(zone, disk)
			h.azureMetadata("tags", v1alpha1.OpcodeAdd, map[string]string{"c": "3", "a": "1", "b": "2"})
			h.cloudMetadata("cm", "tags", limit, map[string]string{classifierOf(infra): "owned"})
			// The pass that wrote: 2 failed (the zone and the disk). An
			// earlier one on a loaded machine may report Ready=False for a
			// passing reason, having written nothing.
			h.waitReadyWhere("cm", metav1.ConditionFalse, " with the zone and the disk failed",
				func(cm *v1alpha1.CloudMetadata) bool { return cm.Status.Failed == 2 })
			for _, id := range []string{zone, disk} {
				tg := h.tags(id)
				_, a := tg["a"]
				_, b := tg["b"]
				_, c := tg["c"]
				switch limit {
				case v1alpha1.LimitPartial:
					if !a || !b || c {
						t.Errorf("PARTIAL: %s has a=%v b=%v c=%v, want a and b (name order), not c", id, a, b, c)
					}
				case v1alpha1.LimitStrict:
					if a || b || c {
						t.Errorf("STRICT: %s has a=%v b=%v c=%v, want none", id, a, b, c)
					}
				}
			}
			if tg := h.tags(e.ID(sub, armsim.TypeNetworkInterface, 0)); tg["c"] != "3" {
				t.Errorf("a resource with room did not get all tags: %v", tg)
			}
			st := h.azureStatus("tags").Status
			if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionPolicy); c == nil || c.Status != metav1.ConditionFalse {
				t.Errorf("Policy = %+v", c)
			}
		})
	}
}

// fill adds n filler tags to a resource.
func fill(t *testing.T, h *harness, id string, n int) {
	t.Helper()
	h.setTags(id, tagstest.Numbered("x", n))
}

// TestClassifiersOrAndRemoval: two classifiers are OR-ed; a resource that
// loses its classifier leaves scope and keeps its tags, and an edit there
// is no longer reverted.
func TestClassifiersOrAndRemoval(t *testing.T) {
	h := newHarness(t)
	one := h.estate("one", 1)
	two := h.estate("two", 1)
	h.azureMetadata("tags", v1alpha1.OpcodeUpdate, map[string]string{"env": "prod"})
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("one"): "owned", classifierOf("two"): "owned"})
	cm := h.waitReady("cm", metav1.ConditionTrue)
	if want := len(allIDs(one)) + len(allIDs(two)); int(cm.Status.Matched) != want {
		t.Errorf("matched %d, want %d", cm.Status.Matched, want)
	}
	disk := two.ID(sub, armsim.TypeDisk, 0)
	if err := h.az.Server.DeleteTags(disk, classifierOf("two")); err != nil {
		t.Fatal(err)
	}
	h.setTags(disk, map[string]string{"env": "mine-now"})
	h.indexed(disk) // no event announces the edits: a pass sees them once Resource Graph does
	cm = h.pass("cm")
	if want := len(allIDs(one)) + len(allIDs(two)) - 1; int(cm.Status.Matched) != want {
		t.Errorf("matched %d after the classifier was removed, want %d", cm.Status.Matched, want)
	}
	if got := h.tags(disk)["env"]; got != "mine-now" {
		t.Errorf("a resource out of scope was written: env=%q", got)
	}
}

// TestInvalidRefWritesNothing: a reference to a missing object makes the
// CloudMetadata not Ready and writes nothing; creating the object fixes it.
func TestInvalidRefWritesNothing(t *testing.T) {
	h := newHarness(t)
	e := h.estate("ref", 1)
	h.cloudMetadata("cm", "missing", "", map[string]string{classifierOf("ref"): "owned"})
	cm := h.waitReady("cm", metav1.ConditionFalse)
	if c := meta.FindStatusCondition(cm.Status.Conditions, v1alpha1.ConditionReady); c.Reason != "RefNotFound" || !strings.Contains(c.Message, `"missing"`) {
		t.Errorf("Ready = %+v", c)
	}
	if n := h.writes(); n != 0 {
		t.Errorf("%d writes with a broken reference", n)
	}
	h.azureMetadata("missing", v1alpha1.OpcodeAdd, map[string]string{"env": "prod"})
	h.waitReady("cm", metav1.ConditionTrue)
	if got := h.tags(e.ID(sub, armsim.TypeDisk, 0))["env"]; got != "prod" {
		t.Errorf("env=%q after the reference was fixed", got)
	}
}

// TestInvalidTagsApplyNothing: a request the cloud's rules refuse, past
// admission (two names Azure takes as one), is not Approved and writes
// nothing.
func TestInvalidTagsApplyNothing(t *testing.T) {
	h := newHarness(t)
	h.estate("inv", 1)
	h.azureMetadata("tags", v1alpha1.OpcodeAdd, map[string]string{"Env": "a", "env": "b"})
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("inv"): "owned"})
	cm := h.waitReady("cm", metav1.ConditionFalse)
	if c := meta.FindStatusCondition(cm.Status.Conditions, v1alpha1.ConditionReady); c.Reason != "InvalidTags" {
		t.Errorf("Ready = %+v", c)
	}
	st := h.azureStatus("tags").Status
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionApproved); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Approved = %+v", c)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse ||
		c.Reason != metadata.ReasonInvalidTags || !strings.HasPrefix(c.Message, "Approved=False: ") {
		t.Errorf("the AzureMetadata's Ready = %+v, want False with Approved's reason and message", c)
	}
	if n := h.writes(); n != 0 {
		t.Errorf("%d writes by an invalid request", n)
	}
}

// TestRestartLosesAndRepeatsNothing: the controller is stopped while it
// applies a tag to many resources; after a restart every resource carries
// it and none was written twice.
func TestRestartLosesAndRepeatsNothing(t *testing.T) {
	h := newHarness(t)
	e := h.estate("rst", 20)                     // 201 resources and a group
	h.az.Server.SetLatency(5 * time.Millisecond) // the apply takes a while
	h.azureMetadata("tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod"})
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("rst"): "owned"})
	eventually(t, "some writes", func() string {
		if n := len(h.auditRecords()); n < 10 {
			return fmt.Sprintf("%d audit records", n)
		}
		return ""
	})
	h.stop()
	// A restarted process knows nothing of the writes of the one before:
	// it sees them when Resource Graph does. Starting a new process (a pod
	// scheduled, a lease taken over) takes longer than the index's usual
	// lag; the test waits for the index as that time would.
	h.az.Server.SetLatency(0)
	h.indexed(allIDs(e)...)
	h.startController()
	h.waitReady("cm", metav1.ConditionTrue)
	seen := map[string]int{}
	for _, r := range h.auditRecords() {
		if r.Result == audit.ResultOK {
			seen[strings.ToLower(r.Resource)]++
		}
	}
	ids := allIDs(e)
	for _, id := range ids {
		if h.tags(id)["env"] != "prod" {
			t.Errorf("%s lacks env after the restart", id)
		}
		if n := seen[strings.ToLower(id)]; n > 1 {
			t.Errorf("%s written %d times", id, n)
		}
	}
}

// TestThrottleStormConverges: a large apply meets a storm of 429s; the
// controller waits as asked and converges, nothing lost and no resource
// written twice.
func TestThrottleStormConverges(t *testing.T) {
	h := newHarness(t)
	// ARM answers the first 20 tag writes with 429 and a Retry-After longer
	// than the SDK's retry ceiling (2 s in this harness): the provider's
	// throttle gate must hold the subscription's writes and the controller
	// requeue the pass after the wait.
	h.az.Server.AddFault(armsim.Fault{Operation: "Tags.UpdateAtScope", Count: 20, Status: 429, RetryAfter: 3 * time.Second})
	e := h.estate("storm", 6) // 60 resources and a group
	h.azureMetadata("tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod"})
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("storm"): "owned"})
	h.waitReady("cm", metav1.ConditionTrue)
	if n := h.az.Server.Calls().CountStatus("Tags.UpdateAtScope", 429); n == 0 {
		t.Fatal("no write was throttled: the test did not exercise throttling")
	}
	ok := map[string]int{}
	for _, r := range h.auditRecords() {
		if r.Result == audit.ResultOK {
			ok[strings.ToLower(r.Resource)]++
		}
	}
	for _, id := range allIDs(e) {
		if h.tags(id)["env"] != "prod" {
			t.Errorf("%s lacks env", id)
		}
		if n := ok[strings.ToLower(id)]; n != 1 {
			t.Errorf("%s written %d times", id, n)
		}
	}
}

// TestResourceGroupNamePrefix: resources of a named group whose names start
// with the prefix are in scope without the classifier; others are not.
func TestResourceGroupNamePrefix(t *testing.T) {
	h := newHarness(t)
	if _, err := h.az.Server.CreateResourceGroup(sub, armsim.ResourceGroup{Name: "rg-old"}); err != nil {
		t.Fatal(err)
	}
	mine, err := h.az.Server.CreateResource(sub, "rg-old", armsim.Resource{Type: armsim.TypeDisk, Name: "old-7lpkm-disk"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.az.Server.CreateResource(sub, "rg-old", armsim.Resource{Type: armsim.TypeDisk, Name: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	az := build.AzureMetadata("tags", build.Opcode(v1alpha1.OpcodeUpdate), build.ResourceTags(map[string]string{"env": "prod"}),
		build.ResourceGroupScopes(v1alpha1.ResourceGroupScope{Name: "RG-OLD", NamePrefix: "old-7lpkm"}))
	h.create(az)
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("old-7lpkm"): "owned"})
	cm := h.waitReady("cm", metav1.ConditionTrue)
	if cm.Status.Matched != 1 {
		t.Errorf("matched %d, want 1", cm.Status.Matched)
	}
	if h.tags(mine)["env"] != "prod" {
		t.Errorf("the prefixed resource was not tagged: %v", h.tags(mine))
	}
	if _, ok := h.tags(other)["env"]; ok {
		t.Errorf("a resource without the prefix was tagged")
	}
}

// checkPendingFirst: every result record follows a pending record of the
// same resource and mutation, written no later.
func checkPendingFirst(t *testing.T, lines []audit.Record) {
	t.Helper()
	pending := map[string]audit.Record{}
	for _, r := range lines {
		if r.Result == audit.ResultPending {
			pending[r.Resource] = r
			continue
		}
		p, ok := pending[r.Resource]
		if !ok || !reflect.DeepEqual(p.Set, r.Set) || !reflect.DeepEqual(p.Deleted, r.Deleted) || p.Time.After(r.Time) {
			t.Errorf("result %+v has no pending record of the same mutation before it (pending %+v)", r, p)
		}
		delete(pending, r.Resource)
	}
}
