package labelsync_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/testenv"
)

// held is a waitStatus check: n label removals are held for approval.
func held(n int32) func(v1alpha1.LabelSyncProfileStatus) string {
	return func(s v1alpha1.LabelSyncProfileStatus) string {
		if msg := condition(v1alpha1.ConditionDeletionsHeld, metav1.ConditionTrue, v1alpha1.ReasonMassDeletion)(s); msg != "" {
			return msg
		}
		if s.DeletionsHeld == nil || s.DeletionsHeld.Count != n {
			return fmt.Sprintf("deletionsHeld %+v, want %d", s.DeletionsHeld, n)
		}
		return ""
	}
}

// approve annotates the profile with the token of the set it holds.
func (h *harness) approve(name string) {
	h.t.Helper()
	prof := h.waitStatus(name, func(s v1alpha1.LabelSyncProfileStatus) string {
		if s.DeletionsHeld == nil {
			return "nothing held"
		}
		return ""
	})
	token := prof.Status.DeletionsHeld.Token
	h.update(h.c, prof, func() { prof.Annotations = map[string]string{v1alpha1.ApproveDeletionsAnnotation: token} })
}

// testNewPrefixHeld: a profile whose prefix the Node already uses removes
// none of the labels it never wrote: their removal waits for approval,
// the host's labels land meanwhile. Approved, they go; from then on the
// prefix is the sync's, and a label added on the Node is reverted.
func testNewPrefixHeld(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("alpha", p.workloadKC, nil)
	node := h.node(p.workloadC, "n1", map[string]string{"rack.example.com/extra": "x", "rack.example.com/slot": "4"})
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	h.machine(b, "alpha", node)
	h.profile("p1", "rack.example.com")
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r1", "rack.example.com/extra": "x", "rack.example.com/slot": "4"})
	h.waitStatus("p1", held(2))
	h.waitEvent("p1", labelsync.ReasonDeletionsHeld)
	h.pass("p1")
	if got := h.labels(p.workloadC, node); got["rack.example.com/extra"] != "x" || got["rack.example.com/slot"] != "4" {
		t.Fatalf("labels the sync never wrote were removed: %v", got)
	}

	h.approve("p1")
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r1"})
	h.waitStatus("p1", condition(v1alpha1.ConditionDeletionsHeld, metav1.ConditionFalse, v1alpha1.ReasonNoneHeld))
	h.patchNodeLabels(p.workloadC, node, map[string]*string{"rack.example.com/added": ptr.To("y")})
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r1"})
}

// testReregisteredHostsHeld: hosts re-registered without one label (while
// the profile was suspended) would remove it from every Node at once when
// it resumes: held, the label stays on the Nodes; a host's other change
// still lands.
func testReregisteredHostsHeld(t *testing.T, p *planes) {
	h := newHarness(t, p)
	prof, nodes, hosts := h.fourHosts(p)
	h.waitStatus("p1", ready(metav1.ConditionTrue))

	// Re-registered while the profile is suspended, so that one pass
	// meets them all when it resumes (one by one, the second Node's
	// removal would be held: 2 of 4 Nodes within the hour).
	h.update(h.c, prof, func() { prof.Spec.Suspend = true })
	h.waitStatus("p1", condition(v1alpha1.ConditionSuspended, metav1.ConditionTrue, v1alpha1.ReasonSuspended))
	for _, b := range hosts {
		h.update(h.c, b, func() { delete(b.Labels, "rack.example.com/row") })
	}
	h.update(h.c, hosts[0], func() { hosts[0].Labels["rack.example.com/rack"] = "r2" })
	h.update(h.c, prof, func() { prof.Spec.Suspend = false })
	h.waitLabels(p.workloadC, nodes[0], map[string]string{"rack.example.com/rack": "r2", "rack.example.com/row": "3"})
	h.waitStatus("p1", held(4))
	h.pass("p1")
	for _, n := range nodes {
		if got := h.labels(p.workloadC, n)["rack.example.com/row"]; got != "3" {
			t.Fatalf("node %s lost row (%q) although the removal from every Node waits for approval", n, got)
		}
	}
}

// testRemovalsAcrossRestarts: hosts re-registered without a label one at
// a time, with the controller restarted (a new leader) in between: the
// first Node loses the label (1 of 4), the second's removal is held (2 of
// 4 within the hour), because the status kept the first removal for the
// new controller.
func testRemovalsAcrossRestarts(t *testing.T, p *planes) {
	h := newHarness(t, p)
	_, nodes, hosts := h.fourHosts(p)
	h.update(h.c, hosts[0], func() { delete(hosts[0].Labels, "rack.example.com/row") })
	h.waitLabels(p.workloadC, nodes[0], map[string]string{"rack.example.com/rack": "r1"})
	h.waitStatus("p1", func(s v1alpha1.LabelSyncProfileStatus) string {
		if r := s.RecentWrites; r == nil || len(r.Deletions) != 1 || r.Deletions[0].Tag != "rack.example.com/row" {
			return fmt.Sprintf("recentWrites %+v", r)
		}
		return ""
	})
	h.restart()
	h.update(h.c, hosts[1], func() { delete(hosts[1].Labels, "rack.example.com/row") })
	h.waitStatus("p1", held(1))
	h.pass("p1")
	if got := h.labels(p.workloadC, nodes[1])["rack.example.com/row"]; got != "3" {
		t.Fatalf("the second Node lost row (%q) within the hour after a restart", got)
	}
}

// testRefusedNodeWritesCounted: a workload cluster that refuses the
// Node's patch (an admission policy here; a kubeconfig identity that may
// not patch Nodes in life) is a NodeWriteFailed problem of the host and
// counts in tagsync_labelsync_hosts{state="write_failed"}, which the
// TagsyncLabelSyncWritesFailing alert watches; once the patch goes
// through, the count is 0 again.
func testRefusedNodeWritesCounted(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("alpha", p.workloadKC, nil)
	node := h.node(p.workloadC, "n1", nil)
	let := h.refuseNodeWrites(p.workloadC, node)
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	h.machine(b, "alpha", node)
	h.profile("p1", "rack.example.com")
	h.waitStatus("p1", problem("h1", labelsync.ReasonNodeWriteFailed))
	failed := map[string]string{"kind": "LabelSyncProfile", "namespace": h.ns, "name": "p1", "state": "write_failed"}
	if n := testenv.Counter(t, "tagsync_labelsync_hosts", failed); n != 1 {
		t.Fatalf(`tagsync_labelsync_hosts{state="write_failed"} = %v, want 1`, n)
	}
	let()
	h.pass("p1") // the refusal's retry is spaced out: ask for a pass
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r1"})
	testenv.Eventually(t, waitFor, "write_failed back to 0", func() string {
		if n := testenv.Counter(t, "tagsync_labelsync_hosts", failed); n != 0 {
			return fmt.Sprintf("write_failed = %v", n)
		}
		return ""
	})
}

// refuseNodeWrites makes the API server of c refuse every update of Node
// node, waits until it does, and returns the function that lets them
// through again (also run at cleanup).
func (h *harness) refuseNodeWrites(c client.Client, node string) func() {
	h.t.Helper()
	probe := func() error {
		patch := []byte(`{"metadata":{"annotations":{"test.tagsync.io/probe":"` + time.Now().Format(time.RFC3339Nano) + `"}}}`)
		return c.Patch(h.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, patch))
	}
	return testenv.RefuseUpdates(h.ctx, h.t, c, node, testenv.Refusal{Resource: "nodes", Allow: fmt.Sprintf("object.metadata.name != %q", node)},
		probe, waitFor)
}

// fourHosts makes four hosts labelled rack r1, row 3 on four Nodes of
// cluster alpha and profile p1 over rack.example.com, and waits until
// every Node carries the labels.
func (h *harness) fourHosts(p *planes) (*v1alpha1.LabelSyncProfile, []string, []*metal3.BareMetalHost) {
	h.t.Helper()
	h.cluster("alpha", p.workloadKC, nil)
	labels := map[string]string{"rack.example.com/rack": "r1", "rack.example.com/row": "3"}
	var nodes []string
	var hosts []*metal3.BareMetalHost
	for i := range 4 {
		node := h.node(p.workloadC, fmt.Sprintf("n%d", i), nil)
		b := h.host(fmt.Sprintf("h%d", i), map[string]string{"sync": "p1", "rack.example.com/rack": "r1", "rack.example.com/row": "3"})
		h.machine(b, "alpha", node)
		nodes, hosts = append(nodes, node), append(hosts, b)
	}
	prof := h.profile("p1", "rack.example.com")
	for _, n := range nodes {
		h.waitLabels(p.workloadC, n, labels)
	}
	return prof, nodes, hosts
}
