package metadata_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/audit"
)

// TestRestartKeepsOwnedTags: the controller is stopped while it adds a tag
// to many resources; one it wrote is edited while it is down; a new
// controller, with nothing in memory, reverts the edit (it knows from the
// object's status that the tag is the object's) instead of reporting
// TagTaken.
func TestRestartKeepsOwnedTags(t *testing.T) {
	t.Parallel()
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
	if err := h.az.Server.SetTags(written, map[string]string{"env": "edited"}); err != nil {
		t.Fatal(err)
	}
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
// read is a PermanentError, reported once (one event) and not searched
// again every 30 s as a transient error is; a spec change retries it at
// once.
func TestForbiddenSubscriptionBacksOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.estate("denied", 1)
	h.az.Server.AddFault(armsim.Fault{Operation: "ResourceGraph.Resources", Scope: "/subscriptions/" + sub, Status: 403})
	az := &v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Name: "tags"}, Spec: v1alpha1.AzureMetadataSpec{
		Opcode: v1alpha1.OpcodeUpdate, ResourceTags: map[string]string{"env": "prod"}, Subscriptions: []string{sub}}}
	h.create(az)
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("denied"): "owned"})
	eventually(t, "Request=False PermanentError", func() string {
		c := meta.FindStatusCondition(h.azureStatus("tags").Status.Conditions, v1alpha1.ConditionRequest)
		if c == nil || c.Reason != v1alpha1.ReasonPermanentError {
			return fmt.Sprintf("Request = %+v", c)
		}
		return ""
	})
	queries := func() int { return h.az.Server.Calls().Count("ResourceGraph.Resources") }
	first := queries()
	// A transient error is retried after 30 s: watch a little longer.
	window := time.Now().Add(35 * time.Second)
	for time.Now().Before(window) {
		if n := queries(); n != first {
			t.Fatalf("the forbidden subscription was searched again within 35 s: %d queries, then %d", first, n)
		}
		time.Sleep(500 * time.Millisecond)
	}
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
