package metadata_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/cloudchangetest"
	"github.com/tagsync/tagsync/internal/cloudchange/eventgrid"
	"github.com/tagsync/tagsync/internal/operator"
)

// eventGrid is a test's real event pipeline: armsim's Event Grid delivers
// to the eventgrid webhook, which publishes to the controller's hub.
type eventGrid struct {
	hub     *cloudchange.Hub
	webhook *eventgrid.Webhook
	// published counts the changes the webhook published.
	published atomic.Int64
	key       string
}

// countingSink counts the changes it passes on to the hub.
type countingSink struct{ g *eventGrid }

func (s countingSink) Publish(changes []cloudchange.Change, done func(error)) error {
	s.g.published.Add(int64(len(changes)))
	return s.g.hub.Publish(changes, done)
}

// newEventGridHarness starts a metadata controller whose hub (built with
// opts) takes armsim's Event Grid deliveries through the webhook, and
// whose Azure provider records its writes for their echoes. The event
// subscription is made by subscribe.
func newEventGridHarness(t *testing.T, opts cloudchange.HubOptions) (*harness, *eventGrid) {
	g := &eventGrid{hub: cloudchange.NewHub(opts), key: "a-shared-secret-of-the-test-0123"}
	secret := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(secret, []byte(g.key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, func(h *harness) {
		h.own = g.hub.OwnWrites()
		h.eventOpts = operator.EventsOptions{Hub: g.hub, Sources: []operator.EventSource{func(cloudchange.Sink) (cloudchange.Source, error) {
			w, err := eventgrid.New(eventgrid.Config{BindAddress: "127.0.0.1:0", SecretFile: secret}, countingSink{g})
			g.webhook = w
			return w, err
		}}}
	})
	eventually(t, "the webhook to serve", func() string {
		if g.webhook.Addr() == "" || !g.webhook.Health().Up {
			return fmt.Sprintf("webhook at %q, %+v", g.webhook.Addr(), g.webhook.Health())
		}
		return ""
	})
	return h, g
}

// subscribe makes armsim's Event Grid deliver the subscription's events
// to the webhook.
func (g *eventGrid) subscribe(t *testing.T, h *harness) {
	t.Helper()
	url := fmt.Sprintf("http://%s%s?%s=%s", g.webhook.Addr(), eventgrid.DefaultPath, eventgrid.KeyParameter, g.key)
	h.az.Subscribe(t, "tagsync", armsimtest.WebHook(url))
}

// unsubscribe deletes the event subscription: Event Grid delivers nothing
// more, and the webhook stays up.
func (g *eventGrid) unsubscribe(t *testing.T, h *harness) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.az.ARM(ctx, http.MethodDelete, armsimtest.EventSubscriptionPath(h.az.SubscriptionID, "tagsync"), nil, nil); err != nil {
		t.Fatal(err)
	}
}

// awaitPublished waits until the webhook has published n changes in all.
func (g *eventGrid) awaitPublished(t *testing.T, n int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d changes delivered", n), func() string {
		if got := g.published.Load(); got < n {
			return fmt.Sprintf("%d changes delivered", got)
		}
		return ""
	})
}

// TestEachRevertedEditCostsOneRead: outside edits of two resources of one
// CloudMetadata, one after the other, delivered by Event Grid. Each is
// reverted with one read of its resource: the echo of the first revert
// (the object's own write) must not leave its resource pending for the
// object's next pass, which would read it again.
func TestEachRevertedEditCostsOneRead(t *testing.T) {
	h, g := newEventGridHarness(t, cloudchange.HubOptions{ResyncInterval: 2 * time.Hour, HealthEvery: 20 * time.Millisecond})
	ids := h.applied("evt-one-read")
	g.subscribe(t, h)
	h.az.Server.ResetCalls()
	for i, id := range ids[:2] {
		editAndAwaitRevert(t, h, id)
		g.awaitPublished(t, int64(2*(i+1))) // the edit's change and the revert's echo
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
	g.subscribe(t, h)
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

	g.unsubscribe(t, h)
	if err := h.az.Server.SetTags(ids[1], map[string]string{"env": "dev"}); err != nil {
		t.Fatal(err)
	}
	h.indexed(ids[1]) // the safety-net pass finds the edit once Resource Graph shows it
	requestSync(t, h, "evt-silent", "after-the-outage")
	eventsCondition(metav1.ConditionFalse, v1alpha1.ReasonEventsSilent, "azure events silent", configured)
	if every, _ := g.hub.Interval(time.Minute); every != time.Minute {
		t.Errorf("the interval of an object configured to poll every minute, while silent: %s", every)
	}
	if got := h.tags(ids[1])["env"]; got != "prod" {
		t.Errorf("env=%q on %s after the full pass, want prod", got, ids[1])
	}

	g.subscribe(t, h)
	editAndAwaitRevert(t, h, ids[2])
	eventsCondition(metav1.ConditionTrue, v1alpha1.ReasonEventsOn, "polling every 2h0m0s")
	if every, _ := g.hub.Interval(time.Minute); every != 2*time.Hour {
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
