package kit_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestPatchStatusFromACacheBehindItsOwnWrite runs the status writes of
// four passes of one object the way a controller's cache can show it: the
// second and third pass read the object before the cache showed the
// previous pass's write, the fourth after someone else changed it. Each
// pass's status must be what the server holds afterwards, or the write
// must fail as a conflict; a merge patch from the stale object alone
// leaves the field the second pass set back to 0 at 1, and the third
// pass's status (equal to the stale object's) unwritten.
func TestPatchStatusFromACacheBehindItsOwnWrite(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	c := env.Client
	b := kit.NewBase(c, nil, nil)
	prof := &v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: v1alpha1.LabelSyncProfileSpec{Prefixes: []string{"rack.example.com"}}}
	if err := c.Create(ctx, prof); err != nil {
		t.Fatal(err)
	}
	v0 := prof.DeepCopy()
	conflict := metav1.Condition{Type: v1alpha1.ConditionConflict, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonContestedKeys,
		Message: "contested"}

	// pass writes the status that set makes of before, as a pass that read
	// before from the cache does.
	pass := func(before *v1alpha1.LabelSyncProfile, set func(*v1alpha1.LabelSyncProfileStatus)) (*v1alpha1.LabelSyncProfile, error) {
		obj := before.DeepCopy()
		set(&obj.Status)
		return obj, b.PatchStatus(ctx, obj, before)
	}
	serverHolds := func(want v1alpha1.LabelSyncProfileStatus) {
		t.Helper()
		var got v1alpha1.LabelSyncProfile
		if err := c.Get(ctx, client.ObjectKeyFromObject(prof), &got); err != nil {
			t.Fatal(err)
		}
		for i := range got.Status.Conditions {
			got.Status.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		if !equality.Semantic.DeepEqual(got.Status, want) {
			t.Fatalf("the server holds status %+v, want %+v", got.Status, want)
		}
	}

	// someoneElseWrites changes the object's labels, as another client
	// would; conflicts checks that a pass that read before fails as a
	// conflict.
	someoneElseWrites := func(latest *v1alpha1.LabelSyncProfile, team string) {
		t.Helper()
		changed := latest.DeepCopy()
		changed.Labels = map[string]string{"team": team}
		if err := c.Update(ctx, changed); err != nil {
			t.Fatal(err)
		}
	}
	conflicts := func(before *v1alpha1.LabelSyncProfile, what string) {
		t.Helper()
		if _, err := pass(before, func(s *v1alpha1.LabelSyncProfileStatus) { s.HostsMatched = 9 }); !apierrors.IsConflict(err) {
			t.Fatalf("%s: error %v, want a conflict", what, err)
		}
	}

	v1, err := pass(v0, func(s *v1alpha1.LabelSyncProfileStatus) { s.HostsMatched, s.NodesInSync = 1, 1 })
	if err != nil {
		t.Fatal(err)
	}
	serverHolds(v1alpha1.LabelSyncProfileStatus{HostsMatched: 1, NodesInSync: 1})
	// Events of a pass that reads v0 from the cache name v1's version
	// (kit.Base.Current); the cached object itself is left as read.
	if cur := b.Current(v0); cur.GetResourceVersion() != v1.ResourceVersion || v0.ResourceVersion == v1.ResourceVersion {
		t.Fatalf("Current of the version the last write replaced has resourceVersion %s (cached %s), want the written %s",
			cur.GetResourceVersion(), v0.ResourceVersion, v1.ResourceVersion)
	}
	if cur := b.Current(v1); cur != client.Object(v1) {
		t.Fatal("Current of the written version is a copy, want the object itself")
	}

	// The cache still shows v0.
	if _, err := pass(v0, func(s *v1alpha1.LabelSyncProfileStatus) {
		s.HostsMatched = 1
		meta.SetStatusCondition(&s.Conditions, conflict)
	}); err != nil {
		t.Fatal(err)
	}
	serverHolds(v1alpha1.LabelSyncProfileStatus{HostsMatched: 1, Conditions: []metav1.Condition{conflict}})

	// The cache shows v1, which the server no longer holds; the pass finds
	// v1's status again.
	v3, err := pass(v1, func(*v1alpha1.LabelSyncProfileStatus) {})
	if err != nil {
		t.Fatal(err)
	}
	serverHolds(v1alpha1.LabelSyncProfileStatus{HostsMatched: 1, NodesInSync: 1})

	// Someone else changes the object after the pass read it.
	someoneElseWrites(v3, "a")
	conflicts(v3, "a status write over someone else's newer write")
	serverHolds(v1alpha1.LabelSyncProfileStatus{HostsMatched: 1, NodesInSync: 1})

	// A write the server finds it holds already (a time within the second
	// stored) makes no new version; the next pass must not wait for one.
	var v5 v1alpha1.LabelSyncProfile
	if err := c.Get(ctx, client.ObjectKeyFromObject(prof), &v5); err != nil {
		t.Fatal(err)
	}
	second := metav1.NewTime(time.Now().Truncate(time.Second))
	v6, err := pass(&v5, func(s *v1alpha1.LabelSyncProfileStatus) { s.LastSyncTime = &second })
	if err != nil {
		t.Fatal(err)
	}
	within := metav1.NewTime(second.Add(500 * time.Millisecond))
	v7, err := pass(v6, func(s *v1alpha1.LabelSyncProfileStatus) { s.LastSyncTime = &within })
	if err != nil || v7.ResourceVersion != v6.ResourceVersion {
		t.Fatalf("a write of what the server holds: error %v, resourceVersion %s -> %s", err, v6.ResourceVersion, v7.ResourceVersion)
	}
	v8, err := pass(v7, func(s *v1alpha1.LabelSyncProfileStatus) { s.HostsMatched = 3 })
	if err != nil {
		t.Fatalf("the pass after a write that changed nothing: %v", err)
	}
	serverHolds(v1alpha1.LabelSyncProfileStatus{HostsMatched: 3, NodesInSync: 1, LastSyncTime: &second})

	// Someone else changes the object after the pass's write; the next
	// pass reads the cache from before that write.
	someoneElseWrites(v8, "b")
	conflicts(v7, "a status write from before our last write, with someone else's since")
	serverHolds(v1alpha1.LabelSyncProfileStatus{HostsMatched: 3, NodesInSync: 1, LastSyncTime: &second})
}
