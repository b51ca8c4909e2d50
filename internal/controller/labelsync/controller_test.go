package labelsync_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestLabelSync runs the controller against two real control planes: the
// management cluster (hosts, Cluster API objects, profiles; also a workload
// cluster of its own) and a workload cluster reached through its kubeconfig
// Secret. Each case has its own namespace and controller manager.
func TestLabelSync(t *testing.T) {
	p := startPlanes(t)
	for name, run := range map[string]func(*testing.T, *planes){
		"HostLabelsReachTheNodeAndStay":   testHostLabels,
		"ManagementClusterAsWorkload":     testManagementCluster,
		"HostsWaitThenSync":               testWaiting,
		"NodeReplacement":                 testNodeReplacement,
		"PausedHostAndCluster":            testPaused,
		"PrefixRemovalLeavesLabels":       testPrefixRemoval,
		"UnreachableClusterRecovers":      testUnreachable,
		"Metal3ClusterAnnotations":        testAnnotations,
		"PendingTaintOnlyOnceLabelsLand":  testPendingTaint,
		"OutOfScopeAndOtherProfilesAlone": testOutOfScope,
		"LinksStayInTheirNamespace":       testLinksStayInTheirNamespace,
		"ConflictingHostsWriteNeither":    testConflictingHosts,
		"ConflictInOneProfile":            testConflictInOneProfile,
		"SyncTimeWhileUnreachable":        testSyncTimeWhileUnreachable,
		"SuspendWritesNothingThenResumes": testSuspend,
		"RetainKeepsRemovedLabels":        testRetain,
		"DeletedProfileLeavesLabels":      testDeleteProfileLeavesLabels,
		"NewPrefixRemovalsHeld":           testNewPrefixHeld,
		"ReregisteredHostsRemovalsHeld":   testReregisteredHostsHeld,
		"RemovalsCountedAcrossRestarts":   testRemovalsAcrossRestarts,
		"RefusedNodeWritesCounted":        testRefusedNodeWritesCounted,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(t, p)
		})
	}
}

// pending is the taint a Node can be registered with until its labels land.
var pending = build.NoSchedule(v1alpha1.LabelSyncPendingTaintKey, "")

// withLabels returns base with the changes applied (a nil value deletes).
func withLabels(base map[string]string, changes map[string]*string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range changes {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	return out
}

// patchNodeLabels edits a Node's labels as a person would (kubectl label).
func (h *harness) patchNodeLabels(c client.Client, node string, changes map[string]*string) {
	h.t.Helper()
	var n corev1.Node
	if err := c.Get(h.ctx, types.NamespacedName{Name: node}, &n); err != nil {
		h.t.Fatal(err)
	}
	before := n.DeepCopy()
	n.Labels = withLabels(n.Labels, changes)
	if err := c.Patch(h.ctx, &n, client.MergeFrom(before)); err != nil {
		h.t.Fatal(err)
	}
}

func testHostLabels(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("alpha", p.workloadKC, nil)
	node := h.node(p.workloadC, "n1", map[string]string{"kubernetes.io/hostname": "n1", "other.io/keep": "1", "rack.example.com/stale": "old"})
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1", "zone.example.com/zone": "z1", "unowned.io/x": "y"})
	h.machine(b, "alpha", node)
	h.profile("p1", "rack.example.com", "zone.example.com")

	// The host's in-scope labels land; a stale in-scope label the sync
	// never wrote waits for approval, then goes; the rest of the Node is
	// left alone.
	want := map[string]string{"kubernetes.io/hostname": "n1", "other.io/keep": "1", "rack.example.com/rack": "r1", "zone.example.com/zone": "z1"}
	h.waitLabels(p.workloadC, node, withLabels(want, map[string]*string{"rack.example.com/stale": ptr.To("old")}))
	h.waitStatus("p1", held(1))
	h.approve("p1")
	h.waitLabels(p.workloadC, node, want)
	prof := h.waitStatus("p1", ready(metav1.ConditionTrue))
	if s := prof.Status; s.HostsMatched != 1 || s.NodesInSync != 1 || s.HostsWaiting != 0 || len(s.Problems) != 0 {
		t.Fatalf("status %+v, want 1 matched and in sync", s)
	}
	h.waitEvent("p1", labelsync.ReasonLabelsSynced)

	// Added, changed and removed on the host: the same on the Node.
	h.update(h.c, b, func() {
		b.Labels["rack.example.com/rack"] = "r2"
		b.Labels["rack.example.com/row"] = "3"
		delete(b.Labels, "zone.example.com/zone")
	})
	want = map[string]string{"kubernetes.io/hostname": "n1", "other.io/keep": "1", "rack.example.com/rack": "r2", "rack.example.com/row": "3"}
	h.waitLabels(p.workloadC, node, want)

	// Edits on the Node are reverted (by the Node watch: the resync
	// interval is a minute), while an out-of-scope edit stays.
	h.patchNodeLabels(p.workloadC, node, map[string]*string{"rack.example.com/rack": ptr.To("hacked"), "team.io/owner": ptr.To("me")})
	want["team.io/owner"] = "me"
	h.waitLabels(p.workloadC, node, want)
	h.patchNodeLabels(p.workloadC, node, map[string]*string{"rack.example.com/row": nil})
	h.waitLabels(p.workloadC, node, want)
	h.patchNodeLabels(p.workloadC, node, map[string]*string{"zone.example.com/new": ptr.To("x")})
	h.waitLabels(p.workloadC, node, want)

	// A steady pass writes nothing.
	var before corev1.Node
	if err := p.workloadC.Get(h.ctx, types.NamespacedName{Name: node}, &before); err != nil {
		t.Fatal(err)
	}
	h.pass("p1")
	h.pass("p1")
	var after corev1.Node
	if err := p.workloadC.Get(h.ctx, types.NamespacedName{Name: node}, &after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("a steady pass wrote the Node: resourceVersion %s -> %s, labels %v", before.ResourceVersion, after.ResourceVersion, after.Labels)
	}
}

func testManagementCluster(t *testing.T, p *planes) {
	h := newHarness(t, p)
	// A self-hosted cluster: its kubeconfig Secret reaches the management
	// cluster's own API server.
	h.cluster("self", p.mgmtKube, nil)
	node := h.node(h.c, "m1", map[string]string{"kubernetes.io/hostname": "m1"})
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	h.machine(b, "self", node)
	h.profile("p1", "rack.example.com")
	h.waitLabels(h.c, node, map[string]string{"kubernetes.io/hostname": "m1", "rack.example.com/rack": "r1"})
	h.patchNodeLabels(h.c, node, map[string]*string{"rack.example.com/rack": ptr.To("edited")})
	h.waitLabels(h.c, node, map[string]string{"kubernetes.io/hostname": "m1", "rack.example.com/rack": "r1"})
}

// waiting is a waitStatus check: the hosts waiting for reason are hosts.
func waiting(reason v1alpha1.WaitReason, hosts ...string) func(v1alpha1.LabelSyncProfileStatus) string {
	return func(s v1alpha1.LabelSyncProfileStatus) string {
		for _, w := range s.Waiting {
			if w.Reason == reason && int(w.Count) == len(hosts) && strings.Join(w.Hosts, ",") == strings.Join(hosts, ",") && int(s.HostsWaiting) == len(hosts) {
				return ""
			}
		}
		return fmt.Sprintf("waiting %+v (%d), want %s: %v", s.Waiting, s.HostsWaiting, reason, hosts)
	}
}

func testWaiting(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("alpha", p.workloadKC, nil)
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	h.profile("p1", "rack.example.com")

	// A free host waits for a consumer; that is no problem.
	prof := h.waitStatus("p1", waiting(v1alpha1.WaitNoConsumer, "h1"))
	if c := meta.FindStatusCondition(prof.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("a free host made the profile not Ready: %+v", c)
	}
	// A consumer that does not exist (yet): no Machine.
	h.update(h.c, b, func() {
		b.Spec.ConsumerRef = build.ConsumerRef(h.ns, "h1-m")
	})
	h.waitStatus("p1", waiting(v1alpha1.WaitNoMachine, "h1"))
	// The Machine without a Node yet.
	m := h.machine(b, "alpha", "")
	h.waitStatus("p1", waiting(v1alpha1.WaitNoNodeRef, "h1"))
	// A nodeRef naming a Node that has not registered yet.
	node := h.ns + "-n1"
	h.nodeRef(m, node)
	h.pass("p1")
	h.waitStatus("p1", waiting(v1alpha1.WaitNoNodeRef, "h1"))
	// The Node registers: it gets the labels.
	h.node(p.workloadC, "n1", nil)
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r1"})
	h.waitStatus("p1", func(s v1alpha1.LabelSyncProfileStatus) string {
		if s.HostsWaiting != 0 || s.NodesInSync != 1 || len(s.Waiting) != 0 {
			return fmt.Sprintf("status %+v, want the host in sync", s)
		}
		return ""
	})
	// Waiting was never reported as a problem.
	for _, e := range h.events("p1") {
		if e.Type == corev1.EventTypeWarning {
			t.Errorf("a waiting host caused a warning: %s %s", e.Reason, e.Note)
		}
	}
}

func testNodeReplacement(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("alpha", p.workloadKC, nil)
	old := h.node(p.workloadC, "old", nil)
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	m := h.machine(b, "alpha", old)
	h.profile("p1", "rack.example.com")
	h.waitLabels(p.workloadC, old, map[string]string{"rack.example.com/rack": "r1"})

	// The host is reprovisioned: a new Node, named by the Machine.
	replacement := h.node(p.workloadC, "new", map[string]string{"kubernetes.io/hostname": "new"}, pending)
	h.nodeRef(m, replacement)
	h.waitLabels(p.workloadC, replacement, map[string]string{"kubernetes.io/hostname": "new", "rack.example.com/rack": "r1"})
	h.waitTaints(p.workloadC, replacement, nil)

	// The old Node is no longer the host's: later host changes skip it.
	h.update(h.c, b, func() { b.Labels["rack.example.com/rack"] = "r2" })
	h.waitLabels(p.workloadC, replacement, map[string]string{"kubernetes.io/hostname": "new", "rack.example.com/rack": "r2"})
	h.pass("p1")
	if got := h.labels(p.workloadC, old); got["rack.example.com/rack"] != "r1" {
		t.Fatalf("the replaced Node was written: %v", got)
	}
}

// waitTaints waits until the Node's taints are exactly want.
func (h *harness) waitTaints(c client.Client, node string, want []corev1.Taint) {
	h.t.Helper()
	testenv.Eventually(h.t, waitFor, "taints of node "+node, func() string {
		var n corev1.Node
		if err := c.Get(h.ctx, types.NamespacedName{Name: node}, &n); err != nil {
			return err.Error()
		}
		// The API server taints new Nodes node.kubernetes.io/not-ready
		// (no kubelet reports here); that one is not the test's.
		var taints []corev1.Taint
		for _, t := range n.Spec.Taints {
			if !strings.HasPrefix(t.Key, "node.kubernetes.io/") {
				taints = append(taints, t)
			}
		}
		if len(taints) != len(want) {
			return fmt.Sprintf("taints %v, want %v", n.Spec.Taints, want)
		}
		for i := range want {
			if !taints[i].MatchTaint(&want[i]) {
				return fmt.Sprintf("taints %v, want %v", n.Spec.Taints, want)
			}
		}
		return ""
	})
}

func testPaused(t *testing.T, p *planes) {
	h := newHarness(t, p)
	cl := h.cluster("alpha", p.workloadKC, nil)
	node := h.node(p.workloadC, "n1", nil)
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	h.machine(b, "alpha", node)
	h.profile("p1", "rack.example.com")
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r1"})

	// A paused host: its changes wait, and so do Node edits.
	h.update(h.c, b, func() {
		b.Annotations = map[string]string{metal3.HostPausedAnnotation: ""}
		b.Labels["rack.example.com/rack"] = "r2"
	})
	h.patchNodeLabels(p.workloadC, node, map[string]*string{"rack.example.com/extra": ptr.To("x")})
	prof := h.pass("p1")
	if prof.Status.HostsPaused != 1 || prof.Status.NodesInSync != 0 {
		t.Fatalf("status %+v, want the host paused", prof.Status)
	}
	if got := h.labels(p.workloadC, node); !maps.Equal(got, map[string]string{"rack.example.com/rack": "r1", "rack.example.com/extra": "x"}) {
		t.Fatalf("a paused host's Node was written: %v", got)
	}
	h.update(h.c, b, func() { delete(b.Annotations, metal3.HostPausedAnnotation) })
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r2"})

	// A paused Cluster: the same.
	h.update(h.c, cl, func() { cl.Spec.Paused = ptr.To(true) })
	h.update(h.c, b, func() { b.Labels["rack.example.com/rack"] = "r3" })
	prof = h.pass("p1")
	if prof.Status.HostsPaused != 1 {
		t.Fatalf("status %+v, want the host of the paused cluster paused", prof.Status)
	}
	if got := h.labels(p.workloadC, node); got["rack.example.com/rack"] != "r2" {
		t.Fatalf("a paused cluster's Node was written: %v", got)
	}
	h.update(h.c, cl, func() { cl.Spec.Paused = nil })
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r3"})
}

func testPrefixRemoval(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("alpha", p.workloadKC, nil)
	node := h.node(p.workloadC, "n1", nil)
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1", "zone.example.com/zone": "z1"})
	h.machine(b, "alpha", node)
	prof := h.profile("p1", "rack.example.com", "zone.example.com")
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r1", "zone.example.com/zone": "z1"})

	// zone.example.com is no longer owned: its label stays where it is, and
	// it no longer follows the host.
	h.update(h.c, prof, func() { prof.Spec.Prefixes = []string{"rack.example.com"} })
	h.waitStatus("p1", ready(metav1.ConditionTrue))
	h.update(h.c, b, func() {
		b.Labels["zone.example.com/zone"] = "z2"
		b.Labels["rack.example.com/rack"] = "r2"
	})
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r2", "zone.example.com/zone": "z1"})
	h.patchNodeLabels(p.workloadC, node, map[string]*string{"zone.example.com/zone": nil})
	h.pass("p1")
	if got := h.labels(p.workloadC, node); !maps.Equal(got, map[string]string{"rack.example.com/rack": "r2"}) {
		t.Fatalf("labels %v: a label of a released prefix was written", got)
	}
}

func testUnreachable(t *testing.T, p *planes) {
	h := newHarness(t, p)
	// Cluster far is reached through a proxy the test can stop; cluster
	// self is the management cluster.
	px := startProxy(t, hostPort(t, p.workload.Config.Host))
	h.cluster("far", kubeconfigVia(t, p.workloadKC, px.URL()), nil)
	h.cluster("self", p.mgmtKube, nil)
	farNode := h.node(p.workloadC, "far", nil)
	selfNode := h.node(h.c, "self", nil)
	hFar := h.host("h-far", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	hSelf := h.host("h-self", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	h.machine(hFar, "far", farNode)
	h.machine(hSelf, "self", selfNode)
	h.profile("p1", "rack.example.com")
	h.waitLabels(p.workloadC, farNode, map[string]string{"rack.example.com/rack": "r1"})
	h.waitLabels(h.c, selfNode, map[string]string{"rack.example.com/rack": "r1"})

	// far's API server goes away; both hosts change.
	px.Stop()
	h.update(h.c, hFar, func() { hFar.Labels["rack.example.com/rack"] = "r2" })
	h.update(h.c, hSelf, func() { hSelf.Labels["rack.example.com/rack"] = "r2" })
	// The other cluster is not held up.
	h.waitLabels(h.c, selfNode, map[string]string{"rack.example.com/rack": "r2"})
	// far is reported: status and an event.
	prof := h.waitStatus("p1", waiting(v1alpha1.WaitClusterUnreachable, "h-far"))
	c := meta.FindStatusCondition(prof.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != labelsync.ReasonClusterUnreachable || !strings.Contains(c.Message, h.ns+"/far") {
		t.Fatalf("Ready %+v, want False ClusterUnreachable naming %s/far", c, h.ns)
	}
	if len(prof.Status.Problems) != 1 || prof.Status.Problems[0].Host != "h-far" || prof.Status.Problems[0].Reason != labelsync.ReasonClusterUnreachable {
		t.Fatalf("problems %+v, want h-far's cluster unreachable", prof.Status.Problems)
	}
	// (While the controller starts, either cluster may be reported as
	// not connected yet; the outage names far's host.)
	testenv.Eventually(t, waitFor, "a ClusterUnreachable warning naming h-far", func() string {
		for _, e := range h.events("p1") {
			if e.Reason == labelsync.ReasonClusterUnreachable && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, "h-far") {
				return ""
			}
		}
		return fmt.Sprintf("events %v", reasons(h.events("p1")))
	})

	// far comes back: it converges and the profile is Ready again.
	px.Start()
	h.waitLabels(p.workloadC, farNode, map[string]string{"rack.example.com/rack": "r2"})
	h.waitStatus("p1", ready(metav1.ConditionTrue))
}

func testAnnotations(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("capm3", p.workloadKC, map[string]string{
		metal3.PrefixesAnnotation: " rack.example.com,, my-prefix.kubernetes.io ",
		metal3.IntervalAnnotation: "30s",
	})
	node := h.node(p.workloadC, "n1", map[string]string{"kubernetes.io/hostname": "n1"})
	// No profile selects this host: the Metal3Cluster's annotation does.
	b := h.host("h1", map[string]string{"rack.example.com/rack": "r1", "my-prefix.kubernetes.io/zone": "z1", "other.io/x": "1"})
	h.machine(b, "capm3", node)
	want := map[string]string{"kubernetes.io/hostname": "n1", "rack.example.com/rack": "r1", "my-prefix.kubernetes.io/zone": "z1"}
	h.waitLabels(p.workloadC, node, want)
	h.patchNodeLabels(p.workloadC, node, map[string]*string{"rack.example.com/rack": ptr.To("edited")})
	h.waitLabels(p.workloadC, node, want)
	// No suspend, no deletionPolicy: an in-scope label added on the Node
	// only is removed, as CAPM3 removes it.
	h.patchNodeLabels(p.workloadC, node, map[string]*string{"rack.example.com/extra": ptr.To("x")})
	h.waitLabels(p.workloadC, node, want)

	// An invalid annotation changes nothing and is reported on the
	// Metal3Cluster.
	m3c := metav1PartialObject(metal3.Metal3ClusterGVK.GroupVersion().String(), "Metal3Cluster", h.ns, "capm3")
	h.setAnnotation(m3c, metal3.PrefixesAnnotation, "rack.example.com, kubernetes.io")
	e := h.waitEvent("capm3", labelsync.ReasonInvalidAnnotation)
	if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Note, `"kubernetes.io" is reserved`) {
		t.Fatalf("event %s %q, want a warning saying kubernetes.io is reserved", e.Type, e.Note)
	}
	invalidPasses := testenv.Counter(t, "tagsync_labelsync_passes_total", map[string]string{"kind": "Metal3Cluster", "result": "invalid"})
	h.update(h.c, b, func() { b.Labels["rack.example.com/rack"] = "r2" })
	testenv.Eventually(t, waitFor, "a pass over the invalid Metal3Cluster after the host changed", func() string {
		if got := testenv.Counter(t, "tagsync_labelsync_passes_total", map[string]string{"kind": "Metal3Cluster", "result": "invalid"}); got <= invalidPasses {
			return fmt.Sprintf("%v invalid passes", got)
		}
		return ""
	})
	if got := h.labels(p.workloadC, node); !maps.Equal(got, want) {
		t.Fatalf("labels %v: an invalid annotation changed the Node", got)
	}
	// An invalid interval is refused too.
	h.setAnnotation(m3c, metal3.PrefixesAnnotation, "rack.example.com")
	h.setAnnotation(m3c, metal3.IntervalAnnotation, "5s")
	testenv.Eventually(t, waitFor, "the invalid interval reported", func() string {
		for _, e := range h.events("capm3") {
			if e.Reason == labelsync.ReasonInvalidAnnotation && strings.Contains(e.Note, metal3.IntervalAnnotation) {
				return ""
			}
		}
		return fmt.Sprintf("events %v", reasons(h.events("capm3")))
	})
	// Fixed: the host's change lands; my-prefix.kubernetes.io is no longer
	// owned, so its label stays.
	h.setAnnotation(m3c, metal3.IntervalAnnotation, "1m")
	want["rack.example.com/rack"] = "r2"
	h.waitLabels(p.workloadC, node, want)
}

func testPendingTaint(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("alpha", p.workloadKC, nil)
	other := build.NoSchedule("example.com/dedicated", "gpu")
	node := h.node(p.workloadC, "n1", nil, pending, other)
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	h.profile("p1", "rack.example.com")
	// No Machine yet: the Node keeps its taint.
	m := h.machine(b, "alpha", "")
	h.pass("p1")
	h.waitTaints(p.workloadC, node, []corev1.Taint{pending, other})
	// Linked: the labels land and the pending taint goes, the other stays.
	h.nodeRef(m, node)
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r1"})
	h.waitTaints(p.workloadC, node, []corev1.Taint{other})

	// A host without in-scope labels has nothing to wait for.
	node2 := h.node(p.workloadC, "n2", nil, pending)
	b2 := h.host("h2", map[string]string{"sync": "p1"})
	h.machine(b2, "alpha", node2)
	h.waitTaints(p.workloadC, node2, nil)
}

func testOutOfScope(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("alpha", p.workloadKC, nil)
	node := h.node(p.workloadC, "n1", map[string]string{
		"node-role.kubernetes.io/worker": "", "sub.rack.example.com/x": "1", "rack.example.com.evil/y": "2", "rackless": "3",
	})
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1", "zone.example.com/zone": "z1"})
	h.machine(b, "alpha", node)
	// Two profiles own different prefixes of the same host: each keeps its
	// own, neither removes the other's.
	h.profile("p1", "rack.example.com")
	other := build.LabelSyncProfile("p2", build.HostSelector(map[string]string{"sync": "p1"}), build.Prefixes("zone.example.com"))
	h.create(other)
	want := map[string]string{"node-role.kubernetes.io/worker": "", "sub.rack.example.com/x": "1", "rack.example.com.evil/y": "2", "rackless": "3",
		"rack.example.com/rack": "r1", "zone.example.com/zone": "z1"}
	h.waitLabels(p.workloadC, node, want)
	h.pass("p1")
	h.pass("p2")
	if got := h.labels(p.workloadC, node); !maps.Equal(got, want) {
		t.Fatalf("labels %v, want %v", got, want)
	}
	// Deleting a profile leaves its labels.
	if err := h.c.Delete(h.ctx, other); err != nil {
		t.Fatal(err)
	}
	h.update(h.c, b, func() { delete(b.Labels, "zone.example.com/zone"); b.Labels["rack.example.com/rack"] = "r2" })
	want["rack.example.com/rack"] = "r2"
	h.waitLabels(p.workloadC, node, want)
}

// metav1PartialObject names an object for metadata-only reads and updates.
func metav1PartialObject(apiVersion, kind, ns, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// setAnnotation sets one annotation on an object with a merge patch.
func (h *harness) setAnnotation(obj client.Object, key, value string) {
	h.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if err := h.c.Patch(h.ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		h.t.Fatal(err)
	}
}
