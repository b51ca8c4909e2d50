package nodetags

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/cloud/cloudtest"
	"github.com/tagsync/tagsync/internal/scheme"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// unit is a Reconciler on a fake client and the in-memory provider: pure
// controller logic, no API server, no cloud.
type unit struct {
	t     *testing.T
	c     client.Client
	cloud *cloudtest.Provider
	r     *Reconciler
}

func newUnit(t *testing.T, objs ...client.Object) *unit {
	return newUnitWithClock(t, nil, objs...)
}

func newUnitWithClock(t *testing.T, clk clock.PassiveClock, objs ...client.Object) *unit {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.NodeTagSync{}).Build()
	p := cloudtest.New(azure.TagRules)
	// The fake stands in for the cloud a default spec names.
	return &unit{t: t, c: c, cloud: p, r: NewReconciler(c, cloud.Providers{"azure": p}, nil, nil, clk)}
}

func (u *unit) reconcile() reconcile.Result {
	u.t.Helper()
	got := u.pass()
	if got.Err != nil && got.Result.RequeueAfter == 0 {
		u.t.Logf("reconcile error (workqueue backoff): %v", got.Err)
	}
	return got.Result
}

// pass runs one Reconcile of the NodeTagSync "nts".
func (u *unit) pass() testenv.Reconciled {
	u.t.Helper()
	return testenv.Reconcile(context.Background(), u.t, u.r, types.NamespacedName{Name: "nts"})
}

func (u *unit) ready() *metav1.Condition {
	u.t.Helper()
	var nts v1alpha1.NodeTagSync
	if err := u.c.Get(context.Background(), client.ObjectKey{Name: "nts"}, &nts); err != nil {
		u.t.Fatal(err)
	}
	return meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionReady)
}

func unitObjects() []client.Object {
	return []client.Object{
		build.NodeTagSync("nts", build.UID("u1"), build.Generation(1)),
		build.Node("n1", build.Labels(map[string]string{"azure.tags/team": "blue"})),
	}
}

func TestUnitThrottledReadRequeuesAfterRetryAfter(t *testing.T) {
	u := newUnit(t, unitObjects()...)
	u.cloud.FailNext(cloudtest.OpSnapshot, &cloud.ThrottledError{Scope: "reads", RetryAfter: 90 * time.Second})
	if res := u.reconcile(); res.RequeueAfter != 90*time.Second {
		t.Fatalf("requeued after %s, want the 90s the cloud asked for", res.RequeueAfter)
	}
	if c := u.ready(); c == nil || c.Reason != "Throttled" {
		t.Fatalf("Ready = %+v, want Throttled", c)
	}
}

func TestUnitThrottledWriteRequeuesAfterRetryAfter(t *testing.T) {
	u := newUnit(t, unitObjects()...)
	u.cloud.SetResource("/r/vm1", tags.Set{"env": "prod"})
	u.cloud.Place("n1", "/r/vm1", false)
	u.cloud.FailNext(cloudtest.OpPatchTags, &cloud.ThrottledError{Scope: "writes", RetryAfter: 2 * time.Minute})
	if res := u.reconcile(); res.RequeueAfter != 2*time.Minute {
		t.Fatalf("requeued after %s, want 2m", res.RequeueAfter)
	}
	u.reconcile()
	if r, _ := u.cloud.Resource("/r/vm1"); r.Tags["team"] != "blue" {
		t.Fatalf("the retry after the wait did not write team=blue: %v", r.Tags)
	}
}

// TestUnitForbiddenReadWaitsForAPerson: a cloud read the identity may not
// make is not retried by the workqueue's backoff: the pass asks for the next
// one after the resync interval, doubling while the spec stays the same,
// and starts again at the interval when the spec changes. A transient
// failure is an error, retried with the backoff.
func TestUnitForbiddenReadWaitsForAPerson(t *testing.T) {
	objs := unitObjects()
	objs[0].(*v1alpha1.NodeTagSync).Spec.ResyncInterval = &metav1.Duration{Duration: 5 * time.Minute}
	u := newUnit(t, objs...)
	forbidden := fmt.Errorf("reading resource group rg: %w", cloud.ErrForbidden)
	for _, want := range []time.Duration{5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute, 30 * time.Minute} {
		u.cloud.FailNext(cloudtest.OpSnapshot, forbidden)
		u.pass().Requeue(want, want)
	}
	var nts v1alpha1.NodeTagSync
	if err := u.c.Get(context.Background(), client.ObjectKey{Name: "nts"}, &nts); err != nil {
		t.Fatal(err)
	}
	nts.Spec.ResyncInterval = &metav1.Duration{Duration: 6 * time.Minute}
	nts.Generation++
	if err := u.c.Update(context.Background(), &nts); err != nil {
		t.Fatal(err)
	}
	u.cloud.FailNext(cloudtest.OpSnapshot, forbidden)
	u.pass().Requeue(6*time.Minute, 6*time.Minute)
	u.cloud.FailNext(cloudtest.OpSnapshot, errors.New("connection reset"))
	u.pass().Failed("connection reset")
}

func TestUnitMissingResourceIsAnErrorWithAReason(t *testing.T) {
	u := newUnit(t, unitObjects()...)
	u.cloud.Place("n1", "/r/gone", false) // placed on a resource the read did not return
	u.reconcile()
	var nts v1alpha1.NodeTagSync
	if err := u.c.Get(context.Background(), client.ObjectKey{Name: "nts"}, &nts); err != nil {
		t.Fatal(err)
	}
	d := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionDegraded)
	if nts.Status.ErrorCount != 1 || d == nil || !strings.Contains(d.Message, "missing from the cloud read") {
		t.Fatalf("errors %d, Degraded %+v; want 1 error whose first error says the resource is missing", nts.Status.ErrorCount, d)
	}
}

func TestUnitSteadyNodesCostNoMerge(t *testing.T) {
	u := newUnit(t, unitObjects()...)
	u.cloud.SetResource("/r/vm1", tags.Set{"env": "prod"})
	u.cloud.Place("n1", "/r/vm1", false)
	u.reconcile() // writes team to the cloud and env to the node
	u.reconcile() // sees both sides agree: steady
	if n := u.r.Steady("nts"); n != 1 {
		t.Fatalf("%d steady nodes after agreement, want 1", n)
	}
	writes := u.cloud.Count(cloudtest.OpPatchTags)
	u.reconcile()
	if u.cloud.Count(cloudtest.OpPatchTags) != writes || u.r.Steady("nts") != 1 {
		t.Fatal("a steady node was merged or written again")
	}
}

// TestUnitResyncIntervalOnTheClock: on a fake clock, passes within the
// resync interval reuse cached reads and are requeued for the time left; once
// the interval has passed, the next pass reads fresh.
func TestUnitResyncIntervalOnTheClock(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	objs := unitObjects()
	objs[0].(*v1alpha1.NodeTagSync).Spec.ResyncInterval = &metav1.Duration{Duration: 5 * time.Minute}
	u := newUnitWithClock(t, clk, objs...)
	u.cloud.SetResource("/r/vm1", tags.Set{"team": "blue"})
	u.cloud.Place("n1", "/r/vm1", false)
	fresh := func() []bool {
		var out []bool
		for _, c := range u.cloud.Calls() {
			if c.Op == cloudtest.OpSnapshot {
				out = append(out, c.Fresh)
			}
		}
		return out
	}
	if res := u.reconcile(); res.RequeueAfter != 5*time.Minute {
		t.Fatalf("first pass requeued after %s, want the full 5m", res.RequeueAfter)
	}
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	if res := u.reconcile(); res.RequeueAfter != 3*time.Minute {
		t.Fatalf("a pass 2m later requeued after %s, want the 3m left", res.RequeueAfter)
	}
	clk.SetTime(clk.Now().Add(3 * time.Minute))
	u.reconcile()
	if got := fresh(); len(got) != 3 || !got[0] || got[1] || !got[2] {
		t.Fatalf("fresh reads per pass = %v, want [true false true]", got)
	}
}

// TestUnitFailedScopeDoesNotForceFreshReads: while one scope cannot be read,
// passes within the resync interval still use cached reads for the others
// (the provider never caches a failed scope, so it is read again anyway).
func TestUnitFailedScopeDoesNotForceFreshReads(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	u := newUnitWithClock(t, clk, unitObjects()...)
	u.cloud.FailScope("resource group locked", cloud.ErrForbidden, "n1")
	u.reconcile()
	u.reconcile()
	var fresh []bool
	for _, c := range u.cloud.Calls() {
		fresh = append(fresh, c.Fresh)
	}
	if len(fresh) != 2 || !fresh[0] || fresh[1] {
		t.Fatalf("fresh reads per pass = %v, want [true false]", fresh)
	}
	if c := u.ready(); c == nil || c.Reason != "CloudReadFailed" {
		t.Fatalf("Ready = %+v, want CloudReadFailed", c)
	}
}

// TestUnitStatusWrittenWhenTheCacheLags: the cached NodeTagSync can still
// show an older status than the one this controller last wrote; a new status
// equal to that older one must still be written, or the stored status would
// keep describing a pass that is no longer the latest.
func TestUnitStatusWrittenWhenTheCacheLags(t *testing.T) {
	u := newUnit(t, unitObjects()...)
	ctx := context.Background()
	older := v1alpha1.NodeTagSyncStatus{SyncedNodes: 3}
	latest := v1alpha1.NodeTagSyncStatus{SyncedNodes: 2}
	var stored v1alpha1.NodeTagSync
	if err := u.c.Get(ctx, client.ObjectKey{Name: "nts"}, &stored); err != nil {
		t.Fatal(err)
	}
	st := &syncState{}
	if err := u.r.writeStatus(ctx, stored.DeepCopy(), latest, st); err != nil { // our last write
		t.Fatal(err)
	}
	lagging := stored.DeepCopy() // what a lagging cache shows: the older status
	lagging.Status = older
	if err := u.r.writeStatus(ctx, lagging, older, st); err != nil {
		t.Fatal(err)
	}
	if err := u.c.Get(ctx, client.ObjectKey{Name: "nts"}, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Status.SyncedNodes != 3 {
		t.Fatalf("stored status counts %d synced nodes, want 3: the write was skipped because the lagging cache already showed it", stored.Status.SyncedNodes)
	}
}

// TestUnitStaleCacheKeepsLastFullSyncTime: a pass that reads no fresh state
// builds its status from the cached NodeTagSync, which may not show the
// lastFullSyncTime the pass before it wrote; it keeps the written one.
func TestUnitStaleCacheKeepsLastFullSyncTime(t *testing.T) {
	written := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	last := &v1alpha1.NodeTagSyncStatus{LastFullSyncTime: &written}
	stale := build.NodeTagSync("nts", build.Generation(1))
	o := &outcome{}
	if got := o.status(stale, last, syncConfig{}, nil, false, written.Add(time.Second)); got.LastFullSyncTime == nil || !got.LastFullSyncTime.Equal(&written) {
		t.Fatalf("lastFullSyncTime = %v after a pass on a stale cached copy, want the %v written before", got.LastFullSyncTime, written)
	}
	fresh := written.Add(time.Minute)
	if got := o.status(stale, last, syncConfig{}, nil, true, fresh); got.LastFullSyncTime == nil || !got.LastFullSyncTime.Time.Equal(fresh) {
		t.Fatalf("lastFullSyncTime = %v after a fresh pass, want %v", got.LastFullSyncTime, fresh)
	}
}

// TestUnitFailedWritesAndScopesFailThePassInMetrics: a pass whose cloud
// write fails, or that cannot read one scope (a 403 on a resource group),
// counts as result="error" in tagsync_nodetags_passes_total, though it
// synced what it could; only a pass with every node synced counts ok and
// sets the last-success timestamp.
func TestUnitFailedWritesAndScopesFailThePassInMetrics(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	passes := func(result string) float64 {
		return testenv.Counter(t, "tagsync_nodetags_passes_total", map[string]string{"nodetagsync": "nts", "result": result})
	}
	lastSuccess := func() float64 {
		return testenv.Counter(t, "tagsync_nodetags_last_success_timestamp_seconds", map[string]string{"nodetagsync": "nts"})
	}
	expect := func(what string, okBefore, errBefore, wantOK, wantErr float64) {
		t.Helper()
		if ok, failed := passes("ok")-okBefore, passes("error")-errBefore; ok != wantOK || failed != wantErr {
			t.Fatalf("%s: passes ok +%v, error +%v; want ok +%v, error +%v", what, ok, failed, wantOK, wantErr)
		}
	}

	u := newUnitWithClock(t, clk, unitObjects()...)
	lastSuccessGauge.DeleteLabelValues("nts") // other tests ran passes of "nts"
	u.cloud.SetResource("/r/vm1", tags.Set{"env": "prod"})
	u.cloud.Place("n1", "/r/vm1", false)
	ok, failed := passes("ok"), passes("error")
	u.cloud.FailNext(cloudtest.OpPatchTags, errors.New("the tags write was refused"))
	u.reconcile()
	expect("a failed cloud write", ok, failed, 0, 1)
	if lastSuccess() != 0 {
		t.Fatalf("last success %v after a failed pass, want none", lastSuccess())
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	ok, failed = passes("ok"), passes("error")
	u.reconcile()
	expect("the retried write", ok, failed, 1, 0)
	if want := float64(clk.Now().Unix()); lastSuccess() != want {
		t.Fatalf("last success %v, want %v (the successful pass)", lastSuccess(), want)
	}

	s := newUnitWithClock(t, clk, unitObjects()...)
	s.cloud.FailScope("resource group locked", cloud.ErrForbidden, "n1")
	ok, failed = passes("ok"), passes("error")
	s.reconcile()
	expect("a scope answering 403", ok, failed, 0, 1)
}

// TestUnitIdenticalWritesAreOneBatch: the pass writes the cloud only
// through a Fresh WriteTags, the path both clouds take: resources of their own
// whose patch is identical in one batch, a resource several Nodes share
// alone.
func TestUnitIdenticalWritesAreOneBatch(t *testing.T) {
	objs := unitObjects()
	objs = append(objs,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"azure.tags/team": "blue"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3", Labels: map[string]string{"azure.tags/team": "red"}}})
	u := newUnit(t, objs...)
	u.cloud.SetResource("/r/vm1", tags.Set{})
	u.cloud.SetResource("/r/vm2", tags.Set{})
	u.cloud.SetResource("/r/vmss", tags.Set{})
	u.cloud.Place("n1", "/r/vm1", false)
	u.cloud.Place("n2", "/r/vm2", false)
	u.cloud.Place("n3", "/r/vmss", true)
	u.reconcile()
	batches := map[string]int{}
	for _, c := range u.cloud.Calls() {
		if c.Op == cloudtest.OpPatchTags {
			batches[c.ID] = c.Batch
		}
	}
	if want := map[string]int{"/r/vm1": 2, "/r/vm2": 2, "/r/vmss": 1}; fmt.Sprint(batches) != fmt.Sprint(want) {
		t.Fatalf("batch sizes of the writes = %v, want %v", batches, want)
	}
}

// TestNotYetRequeueBacksOff: while the cloud does not show a new node's
// resource, passes look again after 5 s, 10 s, 20 s and then every 40 s,
// so AWS's two-minute grace costs 5 reads, not one every 5 s.
func TestNotYetRequeueBacksOff(t *testing.T) {
	var at []time.Duration
	elapsed := time.Duration(0)
	for n := 1; elapsed < 2*time.Minute; n++ {
		elapsed += notYetRequeue(n)
		at = append(at, elapsed)
	}
	want := []time.Duration{5 * time.Second, 15 * time.Second, 35 * time.Second, 75 * time.Second, 115 * time.Second, 155 * time.Second}
	if !slices.Equal(at, want) {
		t.Fatalf("looks after %v, want %v", at, want)
	}
}
