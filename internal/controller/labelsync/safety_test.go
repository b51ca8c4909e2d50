package labelsync_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// condition is a waitStatus check: the condition has the status and
// reason.
func condition(typ string, status metav1.ConditionStatus, reason string) func(v1alpha1.LabelSyncProfileStatus) string {
	return func(s v1alpha1.LabelSyncProfileStatus) string {
		c := meta.FindStatusCondition(s.Conditions, typ)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Sprintf("%s is %+v, want %s %s", typ, c, status, reason)
		}
		return ""
	}
}

func testSuspend(t *testing.T, p *planes) {
	h := newHarness(t, p)
	b, node := h.syncedHost(p)
	prof := h.waitStatus("p1", ready(metav1.ConditionTrue))

	// Suspended, with a resync interval far beyond the test: what follows
	// is driven by the watches and the spec alone.
	h.update(h.c, prof, func() {
		prof.Spec.Suspend = true
		prof.Spec.ResyncInterval = &metav1.Duration{Duration: 24 * time.Hour}
	})
	h.waitStatus("p1", condition(v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspended))

	// The host changes, the Node is edited, a new host's Node registers
	// with the pending taint: all read and reported, nothing written.
	node2 := h.node(p.workloadC, "n2", nil, pending)
	b2 := h.host("h2", map[string]string{"sync": "p1", "rack.example.com/rack": "r9"})
	h.machine(b2, "alpha", node2)
	h.update(h.c, b, func() {
		b.Labels["rack.example.com/rack"] = "r2"
		b.Labels["rack.example.com/row"] = "3"
	})
	h.patchNodeLabels(p.workloadC, node, map[string]*string{"rack.example.com/extra": ptr.To("x")})
	rv1, rv2 := h.resourceVersion(node), h.resourceVersion(node2)
	want := v1alpha1.PendingLabelWrites{Nodes: 2, LabelsSet: 3, LabelsRemoved: 1, TaintsRemoved: 1}
	h.waitStatus("p1", func(s v1alpha1.LabelSyncProfileStatus) string {
		if s.Pending == nil || *s.Pending != want {
			return fmt.Sprintf("pending %+v, want %+v", s.Pending, want)
		}
		return ""
	})
	prof = h.pass("p1")
	if s := prof.Status; s.NodesInSync != 0 || s.HostsMatched != 2 || s.Pending == nil || *s.Pending != want {
		t.Fatalf("status %+v, want 2 matched, none in sync, pending %+v", s, want)
	}
	if msg := condition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSuspended)(prof.Status); msg != "" {
		t.Fatal(msg)
	}
	if c := meta.FindStatusCondition(prof.Status.Conditions, v1alpha1.ConditionSuspended); !strings.Contains(c.Message, "2 Node(s) would be written") {
		t.Fatalf("Suspended says %q, want what would be written", c.Message)
	}
	if got := h.labels(p.workloadC, node); !maps.Equal(got, map[string]string{"rack.example.com/rack": "r1", "rack.example.com/extra": "x"}) {
		t.Fatalf("a suspended profile wrote node %s: %v", node, got)
	}
	if h.resourceVersion(node) != rv1 || h.resourceVersion(node2) != rv2 {
		t.Fatal("a suspended profile wrote a Node")
	}
	h.waitTaints(p.workloadC, node2, []corev1.Taint{pending})
	// The metrics count the Node that keeps its pending taint.
	pendingNodes := map[string]string{"kind": "LabelSyncProfile", "namespace": h.ns, "name": "p1", "state": "pending"}
	if n := testenv.Counter(t, "tagsync_labelsync_hosts", pendingNodes); n != 1 {
		t.Fatalf("tagsync_labelsync_hosts{state=\"pending\"} = %v, want 1: the new host's Node keeps its taint", n)
	}
	if e := h.waitEvent("p1", v1alpha1.ReasonSuspended); e.Type != corev1.EventTypeNormal {
		t.Fatalf("Suspended event %s %q, want Normal", e.Type, e.Note)
	}

	// Resumed: the spec change alone brings the pass that writes.
	h.update(h.c, prof, func() { prof.Spec.Suspend = false })
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r2", "rack.example.com/row": "3"})
	h.waitLabels(p.workloadC, node2, map[string]string{"rack.example.com/rack": "r9"})
	h.waitTaints(p.workloadC, node2, nil)
	prof = h.waitStatus("p1", condition(v1alpha1.ConditionSuspended, metav1.ConditionFalse, v1alpha1.ReasonNotSuspended))
	if s := prof.Status; s.Pending != nil || s.NodesInSync != 2 {
		t.Fatalf("status %+v after resuming, want nothing pending and 2 in sync", s)
	}
	h.waitStatus("p1", ready(metav1.ConditionTrue))
	if n := testenv.Counter(t, "tagsync_labelsync_hosts", pendingNodes); n != 0 {
		t.Fatalf("tagsync_labelsync_hosts{state=\"pending\"} = %v after resuming, want 0", n)
	}
}

func testRetain(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("alpha", p.workloadKC, nil)
	node := h.node(p.workloadC, "n1", map[string]string{"rack.example.com/extra": "x", "other.io/keep": "1"})
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1", "rack.example.com/row": "3"})
	h.machine(b, "alpha", node)
	prof := build.LabelSyncProfile("p1", build.HostSelector(map[string]string{"sync": "p1"}), build.Prefixes("rack.example.com"),
		build.DeletionPolicy(v1alpha1.DeletionPolicyRetain))
	h.create(prof)

	// Added and kept: the Node's own in-scope label stays.
	want := map[string]string{"rack.example.com/extra": "x", "other.io/keep": "1", "rack.example.com/rack": "r1", "rack.example.com/row": "3"}
	h.waitLabels(p.workloadC, node, want)

	// A label removed from the host stays on the Node; a change lands.
	h.update(h.c, b, func() {
		delete(b.Labels, "rack.example.com/row")
		b.Labels["rack.example.com/rack"] = "r2"
	})
	want["rack.example.com/rack"] = "r2"
	h.waitLabels(p.workloadC, node, want)
	prof = h.waitStatus("p1", func(s v1alpha1.LabelSyncProfileStatus) string {
		if s.LabelsRetained != 2 {
			return fmt.Sprintf("labelsRetained %d, want 2", s.LabelsRetained)
		}
		return condition(v1alpha1.ConditionDeletionsHeld, metav1.ConditionTrue, v1alpha1.ReasonRetained)(s)
	})
	if c := meta.FindStatusCondition(prof.Status.Conditions, v1alpha1.ConditionDeletionsHeld); !strings.Contains(c.Message, "2 in-scope label(s)") ||
		!strings.Contains(c.Message, "rack.example.com/row") || !strings.Contains(c.Message, "rack.example.com/extra") {
		t.Fatalf("DeletionsHeld says %q, want the 2 labels kept named", c.Message)
	}
	if s := prof.Status; s.NodesInSync != 1 || s.Pending != nil {
		t.Fatalf("status %+v, want the Node in sync (its kept labels besides)", s)
	}
	h.waitStatus("p1", ready(metav1.ConditionTrue))
	testenv.Eventually(t, waitFor, "a Retained event counting 2 labels", func() string {
		for _, e := range h.events("p1") {
			if e.Reason == v1alpha1.ReasonRetained && e.Type == corev1.EventTypeNormal && strings.Contains(e.Note, "2 in-scope label(s)") {
				return ""
			}
		}
		return fmt.Sprintf("events %v", reasons(h.events("p1")))
	})
	rv := h.resourceVersion(node)
	h.pass("p1")
	if got := h.labels(p.workloadC, node); !maps.Equal(got, want) || h.resourceVersion(node) != rv {
		t.Fatalf("a steady Retain pass wrote the Node: %v", got)
	}

	// Back to Delete: the kept label the host had goes at once; the one
	// the Node carried before the sync (never written by it) waits for
	// approval, then goes.
	h.update(h.c, prof, func() { prof.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete })
	h.waitLabels(p.workloadC, node, map[string]string{"other.io/keep": "1", "rack.example.com/rack": "r2", "rack.example.com/extra": "x"})
	h.waitStatus("p1", held(1))
	h.approve("p1")
	h.waitLabels(p.workloadC, node, map[string]string{"other.io/keep": "1", "rack.example.com/rack": "r2"})
	prof = h.waitStatus("p1", condition(v1alpha1.ConditionDeletionsHeld, metav1.ConditionFalse, v1alpha1.ReasonNoneHeld))
	if prof.Status.LabelsRetained != 0 {
		t.Fatalf("labelsRetained %d with deletionPolicy Delete", prof.Status.LabelsRetained)
	}
}

func testDeleteProfileLeavesLabels(t *testing.T, p *planes) {
	h := newHarness(t, p)
	_, node := h.syncedHost(p)
	hosts := map[string]string{"kind": "LabelSyncProfile", "namespace": h.ns, "name": "p1", "state": "matched"}
	testenv.Eventually(t, waitFor, "the profile's hosts gauge", func() string {
		if got := testenv.Counter(t, "tagsync_labelsync_hosts", hosts); got != 1 {
			return fmt.Sprintf("%v hosts matched", got)
		}
		return ""
	})
	rv := h.resourceVersion(node)
	if err := h.c.Delete(h.ctx, &v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "p1"}}); err != nil {
		t.Fatal(err)
	}
	// The controller has seen the deletion once it forgets the profile.
	testenv.Eventually(t, waitFor, "the deleted profile forgotten", func() string {
		if got := testenv.Counter(t, "tagsync_labelsync_hosts", hosts); got != 0 {
			return fmt.Sprintf("%v hosts still matched", got)
		}
		return ""
	})
	if got := h.labels(p.workloadC, node); !maps.Equal(got, map[string]string{"rack.example.com/rack": "r1"}) || h.resourceVersion(node) != rv {
		t.Fatalf("deleting the profile changed node %s: %v", node, got)
	}
}
