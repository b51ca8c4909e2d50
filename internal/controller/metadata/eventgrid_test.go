package metadata_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/cloudchangetest"
	"github.com/tagsync/tagsync/internal/cloudchange/eventgrid/eventgridtest"
	"github.com/tagsync/tagsync/internal/operator"
)

// newEventGridHarness starts a metadata controller whose hub (built with
// opts) takes armsim's Event Grid deliveries through the webhook, and
// whose Azure provider records its writes for their echoes. The event
// subscription is made by the pipeline's Subscribe.
func newEventGridHarness(t *testing.T, opts cloudchange.HubOptions) (*harness, *eventgridtest.Pipeline) {
	g := eventgridtest.New(t, opts)
	h := newHarnessWith(t, func(h *harness) {
		h.own = g.Hub.OwnWrites()
		h.eventOpts = operator.EventsOptions{Hub: g.Hub, Sources: []operator.EventSource{g.Source}}
	})
	g.AwaitServing(t)
	return h, g
}

// TestEachRevertedEditCostsOneRead: outside edits of two resources of one
// CloudMetadata, one after the other, delivered by Event Grid. Each is
// reverted with one read of its resource: the echo of the first revert
// (the object's own write) must not leave its resource pending for the
// object's next pass, which would read it again.
func TestEachRevertedEditCostsOneRead(t *testing.T) {
	h, g := newEventGridHarness(t, cloudchange.HubOptions{ResyncInterval: 2 * time.Hour, HealthEvery: 20 * time.Millisecond})
	ids := h.applied("evt-one-read")
	g.Subscribe(t, h.az)
	h.az.Server.ResetCalls()
	for i, id := range ids[:2] {
		editAndAwaitRevert(t, h, id)
		g.AwaitPublished(t, int64(2*(i+1))) // the edit's change and the revert's echo
	}
	if got := h.armOps(opGraph, opRead); fmt.Sprint(got) != fmt.Sprint(map[string]int{opRead: 2}) {
		t.Errorf("ARM reads for two reverted edits: %v, want one read each", got)
	}
}

// TestAQuietEventPipelineIsNoticedAndPollingResumes: armsim's Event Grid
// stops delivering (the event subscription is deleted; the webhook still
// listens, so the source stays up). An outside edit then comes with no
// event; the safety-net full pass (a sync request here) finds it and
// reverts it, and that write's echo does not come either: the Events
// condition says EventsSilent and the object polls at its configured
// interval. Once the subscription is back, the next edit's event ends the
// silence on its own.
func TestAQuietEventPipelineIsNoticedAndPollingResumes(t *testing.T) {
	h, g := newEventGridHarness(t, cloudchange.HubOptions{ResyncInterval: 2 * time.Hour, HealthEvery: 20 * time.Millisecond,
		SilentAfter: 2 * time.Second})
	g.Subscribe(t, h.az)
	ids := h.applied("evt-silent")
	configured := fmt.Sprintf("polling every %s", v1alpha1.DefaultSyncInterval)
	eventsCondition := func(status metav1.ConditionStatus, reason string, parts ...string) {
		t.Helper()
		eventually(t, "Events "+reason, func() string {
			var cm v1alpha1.CloudMetadata
			if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "evt-silent"}, &cm); err != nil {
				return err.Error()
			}
			return cloudchangetest.CheckCondition(cm.Status.Conditions, status, reason, parts...)
		})
	}
	// Events arrive: an edit is reverted through its event, and the
	// echoes of the writes come back.
	editAndAwaitRevert(t, h, ids[0])
	eventsCondition(metav1.ConditionTrue, v1alpha1.ReasonEventsOn, "polling every 2h0m0s")

	g.Unsubscribe(t, h.az)
	if err := h.az.Server.SetTags(ids[1], map[string]string{"env": "dev"}); err != nil {
		t.Fatal(err)
	}
	h.indexed(ids[1]) // the safety-net pass finds the edit once Resource Graph shows it
	requestSync(t, h, "evt-silent", "after-the-outage")
	eventsCondition(metav1.ConditionFalse, v1alpha1.ReasonEventsSilent, "azure events silent", configured)
	if every, _ := g.Hub.Interval(time.Minute); every != time.Minute {
		t.Errorf("the interval of an object configured to poll every minute, while silent: %s", every)
	}
	if got := h.tags(ids[1])["env"]; got != "prod" {
		t.Errorf("env=%q on %s after the full pass, want prod", got, ids[1])
	}

	g.Subscribe(t, h.az)
	editAndAwaitRevert(t, h, ids[2])
	eventsCondition(metav1.ConditionTrue, v1alpha1.ReasonEventsOn, "polling every 2h0m0s")
	if every, _ := g.Hub.Interval(time.Minute); every != 2*time.Hour {
		t.Errorf("the interval of an object configured to poll every minute, after the silence: %s", every)
	}
}

// requestSync sets the CloudMetadata's sync request annotation to value.
func requestSync(t *testing.T, h *harness, name, value string) {
	t.Helper()
	var cm v1alpha1.CloudMetadata
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &cm); err != nil {
		t.Fatal(err)
	}
	before := cm.DeepCopy()
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[v1alpha1.SyncRequestAnnotation] = value
	if err := h.c.Patch(h.ctx, &cm, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// editAndAwaitRevert edits env on the resource id outside tagsync, as in
// the portal, and waits for the object to put env=prod back.
func editAndAwaitRevert(t *testing.T, h *harness, id string) {
	t.Helper()
	if err := h.az.Server.SetTags(id, map[string]string{"env": "dev"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the revert of "+id, func() string {
		if got := h.tags(id)["env"]; got != "prod" {
			return "env=" + got
		}
		return ""
	})
}
