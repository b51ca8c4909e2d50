package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// brokenPathBound is the bound: a broken event path is noticed
// and edits reach the labels at the objects' configured interval within
// 10 minutes.
const brokenPathBound = 10 * time.Minute

// TestABrokenIngressIsNoticedOnAQuietEstate runs `tagsync run` with the
// Event Grid webhook behind an "Ingress" (testenv.RoundRobin), its public
// address given as --events-webhook-public-url, probed every 5 s (2 min by
// default: noticed within 2 × 2 min + 10 s then). The NodeTagSync polls
// every minute while events are down, hourly while they are on. After
// the subscription the Ingress loses its backend (it answers 502) and
// nothing changes on the estate: the NodeTagSync says Events=False
// (EventSourceDown, naming the public address), and an edit made after
// that reaches the labels at the configured interval — both well within
// 10 minutes.
func TestABrokenIngressIsNoticedOnAQuietEstate(t *testing.T) {
	ctx := context.Background()
	cleanupSyncObjects(t)
	arm := armsimtest.Start(t, armsimtest.WithRetrySchedule(100*time.Millisecond))
	edited, _ := seedEventPools(t, arm)
	must(t, kube.Client.Create(ctx, build.NodeTagSync("probed", build.ResyncInterval(time.Minute))))

	ingress, err := testenv.StartRoundRobin("127.0.0.1:1") // its backend is set once the webhook's port is chosen
	must(t, err)
	t.Cleanup(func() { _ = ingress.Close() })
	public := "http://" + ingress.Addr() + "/eventgrid"
	p, hook := startWithHook(t, "tagsync (probed)", func(hook string) []string {
		ingress.Set(hook)
		return webhookArgs(t, arm, "nodetags", hook, "--events-webhook-public-url="+public, "--events-webhook-probe-interval=5s")
	})
	waitNodeTagSync(ctx, t, "probed", "the initial sync, events on", func(st v1alpha1.NodeTagSyncStatus) bool { return readyWithEvents(st, 4) })
	arm.Subscribe(t, "tagsync", armsimtest.WebHook(public+"?key="+eventsKey))

	broken := time.Now()
	ingress.Remove(hook)
	var noticed time.Duration
	waitNodeTagSync(ctx, t, "probed", "Events=False naming the public address", func(st v1alpha1.NodeTagSyncStatus) bool {
		for _, c := range st.Conditions {
			if c.Type == v1alpha1.ConditionEvents && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonEventSourceDown &&
				strings.Contains(c.Message, public) {
				noticed = time.Since(broken)
				return true
			}
		}
		return false
	})
	edit := time.Now()
	must(t, arm.Server.SetTags(edited, map[string]string{"env": "after-the-break"}))
	eventuallyWithin(t, 2*time.Minute, "the edit on the labels at the configured interval", func() string {
		return labelsAre(t, edited, "after-the-break")
	})
	arrived := time.Since(edit)
	t.Logf("the broken path noticed %s after the break; an edit after that on the labels %s later (interval 1 min)",
		noticed.Round(time.Millisecond), arrived.Round(time.Millisecond))
	if total := time.Since(broken); total > brokenPathBound {
		t.Errorf("noticed and caught up %s after the break, want within %s", total.Round(time.Second), brokenPathBound)
	}
	if n := p.metric(t, "tagsync_eventgrid_public_endpoint_up"); n != 0 {
		t.Errorf("tagsync_eventgrid_public_endpoint_up = %v, want 0", n)
	}
}

// TestAHeartbeatNoticesADeletedEventSubscription runs `tagsync run` with
// the webhook and --events-heartbeat on the node pools' resource group
// (every 2 s; events count as silent 15 s after an own write's echo is
// due). The heartbeat's echoes keep events on while nothing else changes;
// once the event subscription is deleted — which the webhook, still
// serving, cannot see — the next heartbeat's echo never comes and the
// NodeTagSync says Events=False (EventsSilent, naming the resource group's
// subscription and the heartbeat write) within the interval, the 15 s and
// the hub's 10 s look.
func TestAHeartbeatNoticesADeletedEventSubscription(t *testing.T) {
	ctx := context.Background()
	cleanupSyncObjects(t)
	arm := armsimtest.Start(t, armsimtest.WithRetrySchedule(100*time.Millisecond))
	seedEventPools(t, arm)
	must(t, kube.Client.Create(ctx, build.NodeTagSync("heartbeat", build.ResyncInterval(time.Hour))))
	group := "/subscriptions/" + arm.SubscriptionID + "/resourceGroups/MC_events"

	_, hook := startWithHook(t, "tagsync (heartbeat)", func(hook string) []string {
		return webhookArgs(t, arm, "nodetags", hook, "--events-heartbeat="+group, "--events-heartbeat-interval=2s", "--events-silent-after=15s")
	})
	waitNodeTagSync(ctx, t, "heartbeat", "the initial sync, events on", func(st v1alpha1.NodeTagSyncStatus) bool { return readyWithEvents(st, 4) })
	arm.Subscribe(t, "tagsync", armsimtest.WebHook("http://"+hook+"/eventgrid?key="+eventsKey))
	delivered := arm.Server.EventGridStats().Delivered
	eventually(t, "3 heartbeat echoes delivered", func() string {
		if n := arm.Server.EventGridStats().Delivered - delivered; n < 3 {
			return fmt.Sprintf("%d delivered", n)
		}
		return ""
	})
	if tg, err := arm.Server.Tags(group); err != nil || tg["tagsync-heartbeat"] == "" {
		t.Fatalf("the resource group's tags %v (%v): no heartbeat tag", tg, err)
	}

	deleted := time.Now()
	delCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	must(t, arm.ARM(delCtx, http.MethodDelete, armsimtest.EventSubscriptionPath(arm.SubscriptionID, "tagsync"), nil, nil))
	var noticed time.Duration
	waitNodeTagSync(ctx, t, "heartbeat", "Events=False EventsSilent after the subscription's deletion", func(st v1alpha1.NodeTagSyncStatus) bool {
		for _, c := range st.Conditions {
			if c.Type == v1alpha1.ConditionEvents && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonEventsSilent &&
				strings.Contains(strings.ToLower(c.Message), "subscription "+strings.ToLower(arm.SubscriptionID)) {
				noticed = time.Since(deleted)
				return true
			}
		}
		return false
	})
	t.Logf("the deleted event subscription noticed %s after its deletion (heartbeat 2 s, silent after 15 s)", noticed.Round(time.Millisecond))
}
