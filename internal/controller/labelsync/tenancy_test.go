package labelsync_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// problem is a waitStatus check: the host has a problem of the reason whose
// message contains every one of mentions.
func problem(host, reason string, mentions ...string) func(v1alpha1.LabelSyncProfileStatus) string {
	return func(s v1alpha1.LabelSyncProfileStatus) string {
		for _, pr := range s.Problems {
			if pr.Host != host || pr.Reason != reason {
				continue
			}
			for _, m := range mentions {
				if !strings.Contains(pr.Message, m) {
					return fmt.Sprintf("problem %+v does not mention %q", pr, m)
				}
			}
			return ""
		}
		return fmt.Sprintf("problems %+v, want %s for host %s", s.Problems, reason, host)
	}
}

// waitWarning waits for a Warning of the reason about the object whose
// note contains every one of mentions.
func (h *harness) waitWarning(name, reason string, mentions ...string) {
	h.t.Helper()
	testenv.Eventually(h.t, waitFor, "a "+reason+" warning about "+name, func() string {
		for _, e := range h.events(name) {
			if e.Type != corev1.EventTypeWarning || e.Reason != reason {
				continue
			}
			all := true
			for _, m := range mentions {
				all = all && strings.Contains(e.Note, m)
			}
			if all {
				return ""
			}
		}
		return fmt.Sprintf("events %v, want a %s warning mentioning %v", reasons(h.events(name)), reason, mentions)
	})
}

// resourceVersion reads a Node's resourceVersion.
func (h *harness) resourceVersion(node string) string {
	h.t.Helper()
	var n corev1.Node
	if err := h.p.workloadC.Get(h.ctx, types.NamespacedName{Name: node}, &n); err != nil {
		h.t.Fatal(err)
	}
	return n.ResourceVersion
}

// consume points a host's consumerRef at a Metal3Machine (namespace/name).
func (h *harness) consume(b *metal3.BareMetalHost, m3m types.NamespacedName) {
	h.t.Helper()
	h.update(h.c, b, func() {
		b.Spec.ConsumerRef = build.ConsumerRef(m3m.Namespace, m3m.Name)
	})
}

// testLinksStayInTheirNamespace: a host of one namespace whose consumerRef
// names another namespace's Metal3Machine, and a host whose consumerRef
// names a Metal3Machine that names another host, steer nothing: the links
// are refused and reported, the victim's Node is not written.
func testLinksStayInTheirNamespace(t *testing.T, p *planes) {
	hs := newHarnesses(t, p, 2)
	metal, tenant := hs[0], hs[1]
	_, node := metal.syncedHost(p)
	before := metal.resourceVersion(node)
	victimMachine := types.NamespacedName{Namespace: metal.ns, Name: "h1-m"}

	// Another namespace's host names metal's Metal3Machine.
	evil := tenant.host("evil", map[string]string{"sync": "p1", "rack.example.com/rack": "hacked", "rack.example.com/x": "1"})
	tenant.consume(evil, victimMachine)
	tenant.profile("p1", "rack.example.com")
	tenant.waitStatus("p1", problem("evil", labelsync.ReasonLinkRefused, victimMachine.String(), "another namespace"))
	tenant.waitWarning("p1", labelsync.ReasonLinkRefused, "evil", victimMachine.String())
	tenant.waitStatus("p1", ready(metav1.ConditionFalse))

	// A host of metal's own namespace names the Metal3Machine of h1, which
	// names h1 back, not it.
	thief := metal.host("thief", map[string]string{"sync": "p2", "rack.example.com/rack": "stolen"})
	metal.consume(thief, victimMachine)
	metal.profile("p2", "rack.example.com")
	metal.waitStatus("p2", problem("thief", labelsync.ReasonLinkRefused, victimMachine.String(), metal.ns+"/h1"))
	metal.waitWarning("p2", labelsync.ReasonLinkRefused, "thief", metal.ns+"/h1")

	// More passes of every profile: the victim's Node is never written,
	// and its own profile stays in sync.
	tenant.pass("p1")
	metal.pass("p2")
	prof := metal.pass("p1")
	if s := prof.Status; s.NodesInSync != 1 || len(s.Problems) != 0 {
		t.Fatalf("victim profile status %+v, want its host in sync", s)
	}
	if rv := metal.resourceVersion(node); rv != before {
		t.Fatalf("the victim's Node was written (resourceVersion %s -> %s): labels %v", before, rv, metal.labels(p.workloadC, node))
	}
}

// profileEvery creates a LabelSyncProfile selecting hosts labelled
// sync=<name>, resynced every interval.
func (h *harness) profileEvery(name string, interval time.Duration, prefixes ...string) {
	h.t.Helper()
	h.create(build.LabelSyncProfile(name, build.HostSelector(map[string]string{"sync": name}), build.Prefixes(prefixes...),
		build.ResyncInterval(interval)))
}

// conflict is a waitStatus check: the Conflict condition has status want,
// its message mentions every one of mentions, and (when in conflict) no
// host is counted in sync.
func conflict(want metav1.ConditionStatus, mentions ...string) func(v1alpha1.LabelSyncProfileStatus) string {
	return func(s v1alpha1.LabelSyncProfileStatus) string {
		c := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionConflict)
		if c == nil || c.Status != want {
			return fmt.Sprintf("Conflict is %+v, want %s", c, want)
		}
		for _, m := range mentions {
			if !strings.Contains(c.Message, m) {
				return fmt.Sprintf("Conflict message %q does not mention %q", c.Message, m)
			}
		}
		if want == metav1.ConditionTrue && (c.Reason != v1alpha1.ReasonContestedKeys || s.NodesInSync != 0) {
			return fmt.Sprintf("Conflict %+v with %d in sync, want reason %s and no host in sync", c, s.NodesInSync, v1alpha1.ReasonContestedKeys)
		}
		return ""
	}
}

// waitLabel waits until the Node has the label key=value.
func (h *harness) waitLabel(node, key, value string) {
	h.t.Helper()
	testenv.Eventually(h.t, waitFor, "label "+key+"="+value+" on node "+node, func() string {
		if got, ok := h.labels(h.p.workloadC, node)[key]; !ok || got != value {
			return fmt.Sprintf("labels %v", h.labels(h.p.workloadC, node))
		}
		return ""
	})
}

// testConflictingHosts: two hosts of two profiles reach one Node and want
// other values for keys both profiles own (one of them a key the other
// host lacks). Neither writes those keys, both profiles report the other,
// the uncontested keys still sync; when one host goes, the other's profile
// (whose interval is a day) runs at once and writes.
func testConflictingHosts(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("alpha", p.workloadKC, nil)
	node := h.node(p.workloadC, "n1", nil)
	h1 := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1", "rack.example.com/row": "3",
		"zone.example.com/zone": "z1", "team.example.com/team": "t1"})
	h2 := h.host("h2", map[string]string{"sync": "p2", "rack.example.com/rack": "r2", "zone.example.com/zone": "z1"})
	h.machine(h1, "alpha", node)
	h.machine(h2, "alpha", node)
	h.profileEvery("p1", 24*time.Hour, "rack.example.com", "zone.example.com", "team.example.com")
	h.profileEvery("p2", 24*time.Hour, "rack.example.com", "zone.example.com")

	keys := "rack.example.com/rack, rack.example.com/row"
	h.waitStatus("p1", conflict(metav1.ConditionTrue, h.ns+"/h2", "LabelSyncProfile "+h.ns+"/p2", keys))
	h.waitStatus("p2", conflict(metav1.ConditionTrue, h.ns+"/h1", "LabelSyncProfile "+h.ns+"/p1", keys))
	h.waitStatus("p1", problem("h1", v1alpha1.ReasonContestedKeys, h.ns+"/h2", keys))
	h.waitWarning("p1", v1alpha1.ReasonContestedKeys, h.ns+"/h2", h.ns+"/p2")
	h.waitWarning("p2", v1alpha1.ReasonContestedKeys, h.ns+"/h1", h.ns+"/p1")
	// Keys nobody contests are synced.
	h.waitLabel(node, "team.example.com/team", "t1")
	h.waitLabel(node, "zone.example.com/zone", "z1")

	// No fight: more passes of both write nothing.
	before := h.resourceVersion(node)
	for range 2 {
		h.pass("p1")
		h.pass("p2")
	}
	if rv := h.resourceVersion(node); rv != before {
		t.Fatalf("passes over a contested Node wrote it (resourceVersion %s -> %s): labels %v", before, rv, h.labels(p.workloadC, node))
	}
	// An uncontested change still lands.
	h.update(h.c, h1, func() { h1.Labels["zone.example.com/zone"] = "z2" })
	h.update(h.c, h2, func() { h2.Labels["zone.example.com/zone"] = "z2" })
	h.waitLabel(node, "zone.example.com/zone", "z2")

	// h2 goes: p1 runs at once (not in a day) and writes h1's values.
	if err := h.c.Delete(h.ctx, h2); err != nil {
		t.Fatal(err)
	}
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r1", "rack.example.com/row": "3",
		"zone.example.com/zone": "z2", "team.example.com/team": "t1"})
	h.waitStatus("p1", func(s v1alpha1.LabelSyncProfileStatus) string {
		if msg := conflict(metav1.ConditionFalse)(s); msg != "" {
			return msg
		}
		if s.NodesInSync != 1 || len(s.Problems) != 0 {
			return fmt.Sprintf("status %+v, want h1 in sync", s)
		}
		return ""
	})
}

// testConflictInOneProfile: two hosts of one profile reach one Node (a
// reprovisioned host while the old Machine is deleting) with other values:
// the pass sees both before it writes, so the contested key is never
// written, and the profile names both hosts.
func testConflictInOneProfile(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("alpha", p.workloadKC, nil)
	node := h.node(p.workloadC, "n1", nil, pending)
	old := h.host("old", map[string]string{"sync": "p1", "rack.example.com/rack": "r1", "zone.example.com/zone": "z1"})
	reprovisioned := h.host("new", map[string]string{"sync": "p1", "rack.example.com/rack": "r2", "zone.example.com/zone": "z1"})
	h.machine(old, "alpha", node)
	h.machine(reprovisioned, "alpha", node)
	h.profile("p1", "rack.example.com", "zone.example.com")

	h.waitStatus("p1", conflict(metav1.ConditionTrue, "host old", h.ns+"/new", "host new", h.ns+"/old", "rack.example.com/rack"))
	h.waitWarning("p1", v1alpha1.ReasonContestedKeys, h.ns+"/new")
	h.waitLabel(node, "zone.example.com/zone", "z1")
	h.pass("p1")
	if got := h.labels(p.workloadC, node); got["rack.example.com/rack"] != "" {
		t.Fatalf("the contested key was written: %v", got)
	}
	// The labels are not all in place: the pending taint stays.
	h.waitTaints(p.workloadC, node, []corev1.Taint{pending})
	// The old Machine's host is released: the new host's value lands.
	h.update(h.c, old, func() { old.Spec.ConsumerRef = nil })
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r2", "zone.example.com/zone": "z1"})
	h.waitTaints(p.workloadC, node, nil)
	h.waitStatus("p1", conflict(metav1.ConditionFalse))
}
