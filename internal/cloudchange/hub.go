package cloudchange

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// DefaultCapacity is how many changes a Hub queues before it overflows.
const DefaultCapacity = 10000

// DefaultResyncInterval is how often the controllers poll while events are
// on and every source is up: a slow safety net.
const DefaultResyncInterval = time.Hour

// HubOptions tune a Hub. The zero value is the defaults.
type HubOptions struct {
	// Capacity bounds the changes queued (DefaultCapacity when 0). A
	// delivery that does not fit is dropped and every subscriber runs one
	// full pass instead.
	Capacity int
	// Recent is how many change IDs are remembered to drop redeliveries
	// (Capacity when 0).
	Recent int
	// ResyncInterval replaces the controllers' polling interval while every
	// source is up (DefaultResyncInterval when 0); it never makes them poll
	// more often than they are configured to.
	ResyncInterval time.Duration
	// HealthEvery is how often Start looks at the sources' health
	// (DefaultHealthEvery when 0): when it changes, every subscriber runs
	// one full pass, which picks up the new polling interval and any
	// change a source missed while it was down.
	HealthEvery time.Duration
	// Clock tells the time (the real clock when nil).
	Clock clock.PassiveClock
	// OwnWrites knows which object of which controller made the writes
	// whose changes come back (their echoes): the writer's router is told
	// (Change.EchoOf) and routes the change to its other objects only. A
	// new record when nil; the cloud providers record into it (Hub.OwnWrites).
	OwnWrites *cloud.OwnWrites
	// SilentAfter is how long an echo of an own write, or the event of a
	// change a full pass found, may take before the cloud's events count as
	// silent (silence.go; DefaultSilentAfter when 0, never when negative).
	SilentAfter time.Duration
	// Handover, when set, carries the changes this hub acknowledged but did
	// not finish to the next leader's hub (see Handover).
	Handover Handover
	// Log is where the hub logs (discarded when zero).
	Log logr.Logger
}

// DefaultHealthEvery is how often the hub looks at its sources' health.
const DefaultHealthEvery = 10 * time.Second

// Router is a subscriber of the Hub: a controller that turns changes into
// passes of the objects they concern.
type Router interface {
	// Route returns the keys of the objects the change concerns and
	// arranges a pass of each (it remembers what changed per object and
	// enqueues them). It must neither block nor call the Hub.
	Route(c Change) []string
	// Overflow arranges one full pass of every object: changes were
	// dropped, or the sources' health changed. It must neither block nor
	// call the Hub.
	Overflow()
}

// Hub is the Sink the sources publish to and the controllers subscribe to.
// Publish never blocks: deliveries wait in a bounded queue, which Start
// drains, routing each change to every subscriber. A delivery is done when
// every pass it triggered has completed (see Subscription.Started). Build
// it with NewHub; it runs as a manager Runnable.
type Hub struct {
	opts   HubOptions
	signal chan struct{}

	mu         sync.Mutex
	queue      []delivery
	queued     int // changes in queue
	overflowed bool
	recent     *recentIDs
	subs       []*Subscription
	sources    []Source
	seq        uint64 // counts routed changes
	wasUp      bool   // the sources' health when last looked at (up and not silent)
	looked     bool   // whether CheckHealth looked before
	// silent are the event streams that look silent (silence.go);
	// lastChange is when each stream's latest change was routed, types the
	// resource types each cloud's changes named.
	silent     map[stream]silence
	lastChange map[stream]time.Time
	types      map[string]map[string]bool
	// failed are the changes of deliveries whose passes failed, for a
	// handover (handover.go).
	failed []failedChange
	log    logr.Logger
}

// delivery is one Publish waiting in the queue.
type delivery struct {
	changes []Change
	done    func(error)
	at      time.Time
	only    *Subscription // the one subscriber it is for (a republish); nil: all
}

// NewHub builds a Hub.
func NewHub(opts HubOptions) *Hub {
	if opts.Capacity <= 0 {
		opts.Capacity = DefaultCapacity
	}
	if opts.Recent <= 0 {
		opts.Recent = opts.Capacity
	}
	if opts.ResyncInterval <= 0 {
		opts.ResyncInterval = DefaultResyncInterval
	}
	if opts.HealthEvery <= 0 {
		opts.HealthEvery = DefaultHealthEvery
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.OwnWrites == nil {
		opts.OwnWrites = cloud.NewOwnWrites(0)
	}
	if opts.SilentAfter == 0 {
		opts.SilentAfter = DefaultSilentAfter
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	return &Hub{opts: opts, signal: make(chan struct{}, 1), recent: newRecentIDs(opts.Recent), log: opts.Log}
}

// Publish queues the changes of one delivery (see Sink). Redeliveries of
// recent changes are dropped; a delivery that does not fit in the queue is
// refused (ErrQueueFull: its changes are not remembered as seen, so their
// redelivery is taken), and every subscriber runs one full pass meanwhile.
func (h *Hub) Publish(changes []Change, done func(error)) error { return h.publish(changes, done, nil) }

// publish is Publish for one subscriber only, or for all when only is nil.
func (h *Hub) publish(changes []Change, done func(error), only *Subscription) error {
	if done == nil {
		done = func(error) {}
	}
	now := h.opts.Clock.Now()
	h.mu.Lock()
	fresh := make([]Change, 0, len(changes))
	for _, c := range changes {
		if c.Received.IsZero() {
			c.Received = now
		}
		receivedTotal.WithLabelValues(c.Source).Inc()
		if h.recent.seen(c.ID) {
			duplicatesTotal.WithLabelValues(c.Source).Inc()
			continue
		}
		fresh = append(fresh, c)
	}
	switch {
	case len(fresh) == 0:
	case h.queued+len(fresh) > h.opts.Capacity:
		h.overflowed = true
		overflowsTotal.WithLabelValues().Inc()
		ids := make([]string, len(fresh))
		for i, c := range fresh {
			ids[i] = c.ID
		}
		h.recent.forget(ids)
		h.mu.Unlock()
		h.wake()
		return ErrQueueFull
	default:
		h.queue = append(h.queue, delivery{changes: fresh, done: done, at: now, only: only})
		h.queued += len(fresh)
		queueLength.WithLabelValues().Set(float64(h.queued))
		done = nil
	}
	h.mu.Unlock()
	h.wake()
	if done != nil {
		done(nil)
	}
	return nil
}

// wake tells Start there is work, without blocking.
func (h *Hub) wake() {
	select {
	case h.signal <- struct{}{}:
	default:
	}
}

// Start routes the queued changes, and looks at the sources' health every
// HealthEvery, until ctx ends. With a Handover it first publishes what the
// previous leader left, and last leaves what it did not finish.
func (h *Hub) Start(ctx context.Context) error {
	tick := time.NewTicker(h.opts.HealthEvery)
	defer tick.Stop()
	h.takeOver(ctx)
	for {
		h.Drain()
		select {
		case <-ctx.Done():
			h.leave(ctx)
			return nil
		case <-h.signal:
		case <-tick.C:
			h.CheckHealth()
		}
	}
}

// CheckHealth looks at the sources' health (Start calls it every
// HealthEvery; tests may too): when it changed since the last look, every
// subscriber runs one full pass. The first look only takes note: objects
// start with a full pass anyway.
func (h *Hub) CheckHealth() {
	h.judgeSilence(h.opts.Clock.Now())
	health := h.Health()
	up := health.Up && health.Silent == ""
	h.mu.Lock()
	defer h.mu.Unlock()
	changed := h.looked && up != h.wasUp
	h.wasUp, h.looked = up, true
	if !changed {
		return
	}
	for _, s := range h.subs {
		s.sights.reset()
		s.router.Overflow()
	}
}

// NeedLeaderElection is true: the hub feeds the controllers, which run on
// the leader only.
func (h *Hub) NeedLeaderElection() bool { return true }

// Drain routes every queued change now (Start calls it; tests may too).
func (h *Hub) Drain() {
	h.mu.Lock()
	queue, overflowed := h.queue, h.overflowed
	h.queue, h.queued, h.overflowed = nil, 0, false
	queueLength.WithLabelValues().Set(0)
	var finished []*tracker
	if overflowed {
		for _, s := range h.subs {
			s.sights.reset()
			s.router.Overflow()
		}
	}
	now := h.opts.Clock.Now()
	for _, d := range queue {
		if d.only == nil {
			for _, c := range d.changes {
				h.heard(c, now)
			}
		}
		if t := h.route(d); t.pending == 0 {
			finished = append(finished, t)
		}
	}
	h.mu.Unlock()
	for _, t := range finished {
		t.done(nil)
	}
}

// route hands one delivery's changes to every subscriber and records what
// the delivery waits for. The caller holds h.mu, so a pass that starts
// after this returns sees the changes routed.
func (h *Hub) route(d delivery) *tracker {
	t := &tracker{done: d.done, changes: d.changes}
	for _, c := range d.changes {
		h.seq++
		t.ids = append(t.ids, c.ID)
		writer := h.opts.OwnWrites.Writer(c.Operation)
		for _, s := range h.subs {
			if d.only != nil && s != d.only {
				continue
			}
			routed := c
			if writer.Controller != "" && writer.Controller == s.name {
				routed.EchoOf = writer.Object
				echoesTotal.WithLabelValues(c.Source, s.name).Inc()
			}
			for _, key := range s.router.Route(routed) {
				t.pending++
				s.waiting[key] = append(s.waiting[key], waiter{seq: h.seq, t: t, since: since(c, d.at), source: c.Source})
			}
		}
	}
	return t
}

// since is when a change's latency starts: when the cloud made it, else
// when it was received.
func since(c Change, received time.Time) time.Time {
	if !c.Time.IsZero() {
		return c.Time
	}
	return received
}

// tracker is one delivery whose passes are under way.
type tracker struct {
	pending int
	err     error
	done    func(error)
	ids     []string
	changes []Change
}

// waiter is a change waiting for a pass of one object.
type waiter struct {
	seq    uint64
	t      *tracker
	since  time.Time
	source string
}

// Capacity is how many changes the hub queues at most (HubOptions.Capacity):
// the bound of the queues its subscribers keep of their own.
func (h *Hub) Capacity() int { return h.opts.Capacity }

// OwnWrites is the record of the writes whose echoes the hub knows: the
// cloud providers record the writes of the controllers' passes into it.
func (h *Hub) OwnWrites() *cloud.OwnWrites { return h.opts.OwnWrites }

// Subscribe registers the router of the controller name (as its cloud
// writes name it: cloud.WithWriter). The returned Subscription tells the
// hub when passes start and end.
func (h *Hub) Subscribe(name string, r Router) *Subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &Subscription{hub: h, name: name, router: r, waiting: map[string][]waiter{}, sights: &sights{}}
	h.subs = append(h.subs, s)
	return s
}

// Subscription is one controller's registration with a Hub. A nil
// Subscription (a controller without events) accepts every call and does
// nothing.
type Subscription struct {
	hub     *Hub
	name    string
	router  Router
	waiting map[string][]waiter // by object key; guarded by hub.mu
	sights  *sights             // what its full passes saw (silence.go)
}

// Saw tells the hub that a full pass of the controller read resource (of
// cloudName) with tags t at at: a change since the previous full pass that
// no event announced makes the cloud's events silent (silence.go). Call it
// only for reads that show the resource as it is (fresh, complete).
func (s *Subscription) Saw(cloudName, resource string, t tags.Set, at time.Time) {
	if s != nil && s.hub.opts.SilentAfter >= 0 {
		s.sights.saw(cloudName, resource, t, at)
	}
}

// Name is the controller name the subscription was made with.
func (s *Subscription) Name() string { return s.name }

// Republish publishes changes again (a change completed by a read) to
// this subscription only: the other subscribers had the change itself.
// When the queue is full, done gets ErrQueueFull (every object runs a full
// pass instead).
func (s *Subscription) Republish(changes []Change, done func(error)) {
	if err := s.hub.publish(changes, done, s); err != nil && done != nil {
		done(err)
	}
}

// Started tells the hub a pass of the object key starts, and returns the
// function to call when it ends (with its error, nil on success): the
// changes routed to key before the pass started are then done with it.
func (s *Subscription) Started(key string) func(error) {
	if s == nil {
		return func(error) {}
	}
	h := s.hub
	h.mu.Lock()
	seq := h.seq
	h.mu.Unlock()
	return func(err error) { s.finished(key, seq, err) }
}

// Forget releases the changes waiting for an object that is gone.
func (s *Subscription) Forget(key string) {
	if s != nil {
		s.finished(key, ^uint64(0), nil)
	}
}

// finished releases key's waiters that arrived up to seq.
func (s *Subscription) finished(key string, seq uint64, err error) {
	h := s.hub
	now := h.opts.Clock.Now()
	var done []*tracker
	h.mu.Lock()
	var keep []waiter
	for _, w := range s.waiting[key] {
		if w.seq > seq {
			keep = append(keep, w)
			continue
		}
		passLatency.WithLabelValues(w.source).Observe(now.Sub(w.since).Seconds())
		if err != nil && w.t.err == nil {
			w.t.err = err
		}
		if w.t.pending--; w.t.pending == 0 {
			done = append(done, w.t)
			if w.t.err != nil {
				h.recent.forget(w.t.ids) // its redelivery must not be dropped
				h.keepFailed(w.t, now)
			}
		}
	}
	if len(keep) == 0 {
		delete(s.waiting, key)
	} else {
		s.waiting[key] = keep
	}
	h.mu.Unlock()
	for _, t := range done {
		t.done(t.err)
	}
}

// Waiting is how many changes wait for a pass of key (for tests).
func (s *Subscription) Waiting(key string) int {
	if s == nil {
		return 0
	}
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return len(s.waiting[key])
}
