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
	az := &v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Name: "tags"}, Spec: v1alpha1.AzureMetadataSpec{
		Opcode: v1alpha1.OpcodeUpdate, ResourceTags: map[string]string{"env": "prod"}, Subscriptions: []string{sub}}}
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
