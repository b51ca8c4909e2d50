package labelsync_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/testenv"
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
func (h *harness) consume(b *labelsync.BareMetalHost, m3m types.NamespacedName) {
	h.t.Helper()
	h.update(h.c, b, func() {
		b.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: labelsync.Metal3MachineGVK.GroupVersion().String(),
			Kind: "Metal3Machine", Name: m3m.Name, Namespace: m3m.Namespace}
	})
}

// testLinksStayInTheirNamespace: a host of one namespace whose consumerRef
// names another namespace's Metal3Machine, and a host whose consumerRef
// names a Metal3Machine that names another host, steer nothing: the links
// are refused and reported, the victim's Node is not written.
func testLinksStayInTheirNamespace(t *testing.T, p *planes) {
	hs := newHarnesses(t, p, 2)
	metal, tenant := hs[0], hs[1]
	metal.cluster("alpha", p.workloadKC, nil)
	node := metal.node(p.workloadC, "n1", nil)
	victim := metal.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	metal.machine(victim, "alpha", node)
	metal.profile("p1", "rack.example.com")
	metal.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r1"})
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
