package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

// SilentResult is goal 4: a silent outage (every event subscription
// deleted; the webhook still listens, so its source stays up) noticed and
// polling resumed. The outage starts with an outside edit of an owned tag
// that no event announces, and the safety-net full pass that meets it (a
// sync request standing in for the hourly one): NoticedSeconds is from
// then until tagsync_events_silent is 1; FallbackSeconds until the
// CloudMetadata's Events condition says EventsSilent and its configured
// interval. RecoveredSeconds is from the subscriptions' return and the
// next edit until the condition says EventsOn again.
type SilentResult struct {
	SilentAfterSeconds float64 `json:"silentAfterSeconds"`
	NoticedSeconds     float64 `json:"noticedSeconds"`
	FallbackSeconds    float64 `json:"fallbackSeconds"`
	RecoveredSeconds   float64 `json:"recoveredSeconds"`
}

// silent runs the silent outage scenario.
func (b *bench) silent(ctx context.Context) (*SilentResult, error) {
	r := &SilentResult{SilentAfterSeconds: b.o.silentAfter.Seconds()}
	benchkit.Pause(ctx, 5*time.Second) // passes that follow the previous scenario
	for _, sub := range b.az.SubIDs {
		if err := b.az.Sim.ARM(ctx, http.MethodDelete, armsimtest.EventSubscriptionPath(sub, "tagsync"), nil, nil); err != nil {
			return nil, fmt.Errorf("deleting the event subscription on %s: %w", sub, err)
		}
	}
	id := b.az.Owned[len(b.az.Owned)/2]
	start := time.Now()
	if err := b.az.Arm.SetTags(id, map[string]string{"env": "dev"}); err != nil {
		return nil, err
	}
	// The safety-net pass finds the edit once Resource Graph shows it.
	if err := b.until(ctx, func() bool { shows, err := b.az.Arm.GraphShows(id); return err == nil && shows }, "Resource Graph to show the edit"); err != nil {
		return nil, err
	}
	if err := b.requestSync(ctx, "silent-outage"); err != nil {
		return nil, err
	}
	benchkit.Logf("silent: event subscriptions deleted, %s edited, a full pass requested", id)
	if err := b.until(ctx, func() bool {
		text, _ := b.ctrl.Metrics()
		return benchkit.MetricValue(text, "tagsync_events_silent") >= 1
	}, "tagsync_events_silent"); err != nil {
		return nil, err
	}
	r.NoticedSeconds = benchkit.Secs(time.Since(start))
	configured := fmt.Sprintf("polling every %s", b.o.poll)
	if err := b.until(ctx, func() bool { return b.eventsReason(ctx, v1alpha1.ReasonEventsSilent, configured) }, "Events=EventsSilent"); err != nil {
		return nil, err
	}
	r.FallbackSeconds = benchkit.Secs(time.Since(start))
	benchkit.Logf("silent: noticed after %.1fs, polling every %s after %.1fs", r.NoticedSeconds, b.o.poll, r.FallbackSeconds)

	for _, sub := range b.az.SubIDs {
		if _, err := b.az.On(sub).PutEventSubscription(ctx, "tagsync", armsimtest.WebHook(b.az.Webhook)); err != nil {
			return nil, fmt.Errorf("event subscription on %s: %w", sub, err)
		}
	}
	start = time.Now()
	if err := b.az.Arm.SetTags(b.az.Owned[len(b.az.Owned)/2+1], map[string]string{"env": "dev"}); err != nil {
		return nil, err
	}
	if err := b.until(ctx, func() bool { return b.eventsReason(ctx, v1alpha1.ReasonEventsOn, "") }, "Events=EventsOn"); err != nil {
		return nil, err
	}
	r.RecoveredSeconds = benchkit.Secs(time.Since(start))
	benchkit.Logf("silent: events on again %.1fs after the subscriptions' return and an edit", r.RecoveredSeconds)
	return r, nil
}

// requestSync sets the CloudMetadata's sync request annotation.
func (b *bench) requestSync(ctx context.Context, value string) error {
	var cm v1alpha1.CloudMetadata
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: objName}, &cm); err != nil {
		return err
	}
	before := cm.DeepCopy()
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[v1alpha1.SyncRequestAnnotation] = value
	return b.c.Patch(ctx, &cm, client.MergeFrom(before))
}

// eventsReason reports whether the CloudMetadata's Events condition has
// reason and a message containing part.
func (b *bench) eventsReason(ctx context.Context, reason, part string) bool {
	var cm v1alpha1.CloudMetadata
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: objName}, &cm); err != nil {
		return false
	}
	c := meta.FindStatusCondition(cm.Status.Conditions, v1alpha1.ConditionEvents)
	return c != nil && c.Reason == reason && strings.Contains(c.Message, part)
}
