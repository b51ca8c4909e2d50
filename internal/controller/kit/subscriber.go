package kit

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
)

// Subscriber is what a controller holds (as a named field) to take changes
// from a cloudchange.Hub: its subscription, the enqueueing of the objects a
// change concerns, and the polling interval the sources' health allows.
// Its zero value is events off: the controller polls only.
type Subscriber struct {
	hub  *cloudchange.Hub
	sub  *cloudchange.Subscription
	wake Wake
}

// UseEvents makes the controller take hub's changes, and poll at the hub's
// interval while its sources are up. Call it before the controller's
// SetupWithManager.
func (s *Subscriber) UseEvents(hub *cloudchange.Hub) { s.hub = hub }

// Subscribe registers the router of the controller name with the hub
// (nothing when events are off); SetupWithManager calls it.
func (s *Subscriber) Subscribe(name string, r cloudchange.Router) {
	if s.hub != nil {
		s.sub = s.hub.Subscribe(name, r)
	}
}

// EventsOn reports whether the controller takes changes.
func (s *Subscriber) EventsOn() bool { return s.hub != nil }

// PassStarted tells the hub a pass of the object key starts and returns
// the function to call with its error when it ends (cloudchange.Subscription.Started).
func (s *Subscriber) PassStarted(key string) func(error) { return s.sub.Started(key) }

// Serve runs pass, a pass of the object key, and tells the hub when it
// started and how it ended: the changes routed to key before it started
// are done with it. The pass's context names the object as the writer of
// its cloud writes (cloud.WithWriter), so their echoes skip it.
func (s *Subscriber) Serve(ctx context.Context, key string, pass func(context.Context) (reconcile.Result, error)) (reconcile.Result, error) {
	finished := s.sub.Started(key)
	if s.sub != nil {
		ctx = cloud.WithWriter(ctx, cloud.Writer{Controller: s.sub.Name(), Object: key})
	}
	res, err := pass(ctx)
	finished(err)
	return res, err
}

// Enqueue asks for passes of the objects (from cloudchange.Router.Route: it never
// blocks).
func (s *Subscriber) Enqueue(reqs ...reconcile.Request) { s.wake.Add(reqs...) }

// EnqueueSource is the raw source that feeds Enqueue's requests to the
// controller's workqueue.
func (s *Subscriber) EnqueueSource() source.Source { return s.wake.Source() }

// Republish publishes changes to the hub again (a change completed by a
// read), for this controller only: the others had the change itself.
func (s *Subscriber) Republish(changes []cloudchange.Change, done func(error)) {
	s.sub.Republish(changes, done)
}

// Interval is the polling interval of an object configured to poll every
// configured, and the sources' health (nil: events off).
func (s *Subscriber) Interval(configured time.Duration) (time.Duration, *cloudchange.Health) {
	if s.hub == nil {
		return configured, nil
	}
	every, health := s.hub.Interval(configured)
	return every, &health
}
