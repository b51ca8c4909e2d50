package metadata_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestRestartKeepsOwnedTags: the controller is stopped while it adds a tag
// to many resources; one it wrote is edited while it is down; a new
// controller, with nothing in memory, reverts the edit (it knows from the
// object's status that the tag is the object's) instead of reporting
// TagTaken.
func TestRestartKeepsOwnedTags(t *testing.T) {
	h := newHarness(t)
	h.estate("own", 20)                           // 201 resources and a group
	h.az.Server.SetLatency(20 * time.Millisecond) // the apply takes a while
	h.azureMetadata("tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod"})
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("own"): "owned"})
	var written string
	eventually(t, "a write", func() string {
		for _, r := range h.auditRecords() {
			if r.Result == audit.ResultOK {
				written = r.Resource
				return ""
			}
		}
		return "no write yet"
	})
	h.stop()
	t.Logf("stopped with %d of 202 resources written", len(h.auditRecords()))
	h.az.Server.SetLatency(0)
	h.setTags(written, map[string]string{"env": "edited"})
	h.indexed(written) // no event announces the edit: a pass sees it once Resource Graph does
	h.startController()
	h.pass("cm")
	h.waitReady("cm", metav1.ConditionTrue)
	if got := h.tags(written)["env"]; got != "prod" {
		t.Errorf("the owned tag edited during the restart was not reverted: env=%q", got)
	}
	st := h.azureStatus("tags").Status
	for _, f := range st.Failures {
		t.Errorf("failure %+v", f)
	}
	if len(st.Held) != 1 || st.Held[0].Resources != st.Matched || fmt.Sprint(st.Held[0].Names) != "[env]" {
		t.Errorf("held record %+v for %d matched resources", st.Held, st.Matched)
	}
}

// TestForbiddenSubscriptionBacksOff: a subscription the identity may not
// read is a PermanentError, reported once (one event); the pass asks for
// the next after syncEvery, doubling up to 30 m (not after the 30 s of a
// transient error); a spec change retries it at once.
func TestForbiddenSubscriptionBacksOff(t *testing.T) {
	h := newHarness(t)
	h.estate("denied", 1)
	h.az.Server.AddFault(armsim.Fault{Operation: "ResourceGraph.Resources", Scope: "/subscriptions/" + sub, Status: 403})
	az := build.AzureMetadata("tags", build.Opcode(v1alpha1.OpcodeUpdate), build.ResourceTags(map[string]string{"env": "prod"}), build.Subscriptions(sub))
	h.create(az)
	cm := h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("denied"): "owned"})
	eventually(t, "Request=False PermanentError", func() string {
		c := meta.FindStatusCondition(h.azureStatus("tags").Status.Conditions, v1alpha1.ConditionRequest)
		if c == nil || c.Reason != v1alpha1.ReasonPermanentError {
			return fmt.Sprintf("Request = %+v", c)
		}
		return ""
	})
	// What a pass asks of the workqueue, from a second reconciler on the
	// same objects (and the manager's cache), called directly.
	r := metadata.NewReconciler(h.cached, cloud.Providers{"azure": h.azureProvider()}, events.NewFakeRecorder(100), nil, nil)
	every := cm.Spec.ControllerConfig.SyncInterval()
	for d := every; d <= 4*kit.MaxPersonBackoff; d *= 2 {
		want := max(every, min(d, kit.MaxPersonBackoff))
		testenv.Reconcile(h.ctx, t, r, client.ObjectKeyFromObject(cm)).Requeue(want, want)
	}
	// The alert's series is there from the first (failing) pass on.
	if v := testenv.Counter(t, "tagsync_metadata_failing", map[string]string{"namespace": h.ns, "cloudmetadata": "cm", "cloud": "azure"}); v != 1 {
		t.Errorf("tagsync_metadata_failing = %v after a 403 from the first pass, want 1", v)
	}
	queries := func() int { return h.az.Server.Calls().Count("ResourceGraph.Resources") }
	first := queries()
	if n := h.countEvents(v1alpha1.ReasonPermanentError, "tags"); n != 1 {
		t.Errorf("%d PermanentError events, want 1", n)
	}
	h.update(az, func() { az.Spec.ResourceTags["team"] = "a" })
	eventually(t, "a search at once after the spec changed", func() string {
		if n := queries(); n == first {
			return fmt.Sprintf("%d queries", n)
		}
		return ""
	})
	h.waitServed("tags")
	if c := meta.FindStatusCondition(h.azureStatus("tags").Status.Conditions, v1alpha1.ConditionRequest); c == nil || !strings.Contains(c.Message, "a person must fix") {
		t.Errorf("Request = %+v", c)
	}
}

// countEvents counts the events with reason about the named object, the
// repeats a series aggregates included.
func (h *harness) countEvents(reason, objectName string) int {
	h.t.Helper()
	var list eventsv1.EventList
	if err := h.c.List(h.ctx, &list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Reason == reason && e.Regarding.Name == objectName {
			n++
			if e.Series != nil {
				n += int(e.Series.Count) - 1
			}
		}
	}
	return n
}

// TestNothingIsWrittenWhileTheHeldTagsCannotBeRecorded: while the API
// server refuses the AzureMetadata's status writes (a validating admission
// policy on its status in the test's namespace), the tags it would add are
// not written, since a controller stopped during the writes could not tell
// afterwards which tags it wrote; the resources are reported NotRecorded.
// Once status writes are let through, the pass records and writes them.
func TestNothingIsWrittenWhileTheHeldTagsCannotBeRecorded(t *testing.T) {
	h := newHarness(t)
	h.estate("norec", 1)
	unrefuse := h.refuseStatusWrites()
	h.azureMetadata("tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod"})
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("norec"): "owned"})
	h.waitEvent(metadata.ReasonTagsNotApplied, "tags", metadata.ReasonNotRecorded)
	if n := h.writes(); n != 0 {
		t.Fatalf("%d tag writes while the held tags could not be recorded, want none", n)
	}
	unrefuse()
	eventually(t, "the tags written and held once status writes are let through", func() string {
		st := h.azureStatus("tags").Status
		if st.Matched == 0 || st.InSync != st.Matched || len(st.Held) != 1 || st.Held[0].Resources != st.Matched {
			return fmt.Sprintf("%d matched, %d in sync, held %+v, failures %+v", st.Matched, st.InSync, st.Held, st.Failures)
		}
		return ""
	})
	if n := h.writes(); n == 0 {
		t.Error("no tag writes once status writes were let through")
	}
}

// refuseStatusWrites makes the API server refuse every AzureMetadata
// status write in the test's namespace, waits until it does, and returns
// the function that lets them through again (also run at cleanup).
func (h *harness) refuseStatusWrites() func() {
	h.t.Helper()
	probe := build.AzureMetadata("refusal-probe", build.Namespace(h.ns), build.Opcode(v1alpha1.OpcodeUpdate), build.ResourceTags(map[string]string{"probe": "x"}))
	if err := h.c.Create(h.ctx, probe); err != nil {
		h.t.Fatal(err)
	}
	writeProbe := func() error {
		before := probe.DeepCopy()
		probe.Status.Matched++
		return h.c.Status().Patch(h.ctx, probe, client.MergeFrom(before))
	}
	return testenv.RefuseUpdates(h.ctx, h.t, h.c, "refuse-status-"+h.ns, testenv.Refusal{APIGroup: v1alpha1.GroupVersion.Group,
		Resource: "azuremetadata/status", Allow: "false",
		Namespaces: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": h.ns}}}, writeProbe, waitFor)
}
