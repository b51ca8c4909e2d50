package armsim

import (
	"context"
	"encoding/json"
	"math/rand"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// EventSubscriptionStats counts one event subscription's deliveries.
type EventSubscriptionStats struct {
	// ID of the event subscription.
	ID string `json:"id"`
	// Endpoint is the webhook's URL without its query.
	Endpoint string `json:"endpoint"`
	// Schema is the event delivery schema.
	Schema string `json:"eventDeliverySchema"`
	// ProvisioningState is Succeeded or AwaitingManualAction.
	ProvisioningState string `json:"provisioningState"`
	// Delivered counts the events the endpoint acknowledged (a duplicate
	// counts again).
	Delivered int `json:"delivered"`
	// Attempts counts the POSTs sent.
	Attempts int `json:"attempts"`
	// FailedAttempts counts the POSTs that failed (connection error or a
	// status other than 2xx).
	FailedAttempts int `json:"failedAttempts"`
	// Dropped counts the events given up: after MaxDeliveryAttempts, after
	// their time to live, or at once on 400, 401, 403 or 413.
	Dropped int `json:"dropped"`
	// Duplicated counts the extra copies the duplicate fault queued.
	Duplicated int `json:"duplicated"`
	// Pending counts the events not yet delivered or dropped.
	Pending int `json:"pending"`
	// DelayedUntil is set while the endpoint is taken as unhealthy
	// (EventGridOptions.DelayAfterFailures): nothing is delivered before.
	DelayedUntil *time.Time `json:"delayedUntil,omitempty"`
}

// EventGridStats is every event subscription's counters and their sums.
type EventGridStats struct {
	// Subscriptions in ID order.
	Subscriptions []EventSubscriptionStats `json:"subscriptions"`
	// Delivered, FailedAttempts, Dropped and Pending are the sums.
	Delivered      int `json:"delivered"`
	FailedAttempts int `json:"failedAttempts"`
	Dropped        int `json:"dropped"`
	Pending        int `json:"pending"`
}

// eventGrid holds the event subscriptions and their deliverers.
type eventGrid struct {
	s      *Server
	opts   EventGridOptions
	ctx    context.Context
	cancel context.CancelFunc
	client *http.Client

	mu       sync.Mutex
	subs     map[string]*deliverer // by lower-cased ID
	faults   EventGridFaults
	schedule []time.Duration

	rndMu sync.Mutex
	rnd   *rand.Rand
}

func newEventGrid(s *Server, o EventGridOptions, seed int64) *eventGrid {
	ctx, cancel := context.WithCancel(context.Background())
	client := o.Client
	if client == nil {
		client = &http.Client{}
	}
	return &eventGrid{s: s, opts: o, ctx: ctx, cancel: cancel, client: client, subs: map[string]*deliverer{},
		faults: o.Faults, schedule: o.RetrySchedule, rnd: rand.New(rand.NewSource(seed))}
}

// active reports whether any event subscription exists.
func (eg *eventGrid) active() bool {
	eg.mu.Lock()
	defer eg.mu.Unlock()
	return len(eg.subs) > 0
}

func (eg *eventGrid) deliverers() []*deliverer {
	eg.mu.Lock()
	defer eg.mu.Unlock()
	out := make([]*deliverer, 0, len(eg.subs))
	for _, d := range eg.subs {
		out = append(out, d)
	}
	return out
}

func (eg *eventGrid) lookup(id string) *deliverer {
	eg.mu.Lock()
	defer eg.mu.Unlock()
	return eg.subs[strings.ToLower(id)]
}

// putResult is a stored subscription and whether the PUT created it.
type putResult struct {
	spec EventSubscription
	new  bool
}

// put creates or updates a subscription. A new subscription, or one whose
// endpoint or schema changes, must pass the handshake first (without any
// lock held: it is an HTTP round trip to the endpoint).
func (eg *eventGrid) put(ctx context.Context, spec EventSubscription) (putResult, *Error) {
	old := eg.lookup(spec.ID)
	code := strings.ToUpper(newUUID())
	if old != nil && !old.needsHandshake(spec) {
		spec.Properties.ProvisioningState, code = old.state()
	} else {
		state, e := eg.handshake(ctx, spec, code)
		if e != nil {
			return putResult{}, e
		}
		spec.Properties.ProvisioningState = state
	}
	eg.mu.Lock()
	defer eg.mu.Unlock()
	key := strings.ToLower(spec.ID)
	if d := eg.subs[key]; d != nil {
		d.reconfigure(spec, code)
		return putResult{spec: spec}, nil
	}
	d := newDeliverer(eg, spec, code)
	eg.subs[key] = d
	go d.run()
	return putResult{spec: spec, new: true}, nil
}

// get returns a subscription's settings.
func (eg *eventGrid) get(id string) (EventSubscription, bool) {
	d := eg.lookup(id)
	if d == nil {
		return EventSubscription{}, false
	}
	return d.config(), true
}

// list returns every subscription's settings.
func (eg *eventGrid) list() []EventSubscription {
	var out []EventSubscription
	for _, d := range eg.deliverers() {
		out = append(out, d.config())
	}
	return out
}

// remove deletes a subscription and stops its deliverer.
func (eg *eventGrid) remove(id string) bool {
	eg.mu.Lock()
	d := eg.subs[strings.ToLower(id)]
	delete(eg.subs, strings.ToLower(id))
	eg.mu.Unlock()
	if d != nil {
		d.halt()
	}
	return d != nil
}

// removeAll deletes every subscription.
func (eg *eventGrid) removeAll() {
	for _, d := range eg.deliverers() {
		eg.remove(d.config().ID)
	}
}

// close stops every deliverer for good.
func (eg *eventGrid) close() {
	eg.cancel()
	eg.removeAll()
}

// publish offers an event to every subscription.
func (eg *eventGrid) publish(ev *resourceEvent) {
	for _, d := range eg.deliverers() {
		d.offer(ev)
	}
}

// validate completes a manual validation: a GET of the validation URL.
func (eg *eventGrid) validate(id, code string) bool {
	d := eg.lookup(id)
	return d != nil && d.validate(code)
}

// currentFaults returns the delivery faults in force.
func (eg *eventGrid) currentFaults() EventGridFaults {
	eg.mu.Lock()
	defer eg.mu.Unlock()
	return eg.faults
}

// setFaults changes the delivery faults and wakes every deliverer (a
// resume must not wait for the next event).
func (eg *eventGrid) setFaults(f EventGridFaults) {
	eg.mu.Lock()
	eg.faults = f
	eg.mu.Unlock()
	for _, d := range eg.deliverers() {
		d.signal()
	}
}

// backoff is the wait before retry number n (n >= 1) of an event.
func (eg *eventGrid) backoff(n int) time.Duration {
	eg.mu.Lock()
	defer eg.mu.Unlock()
	return eg.schedule[min(n, len(eg.schedule))-1]
}

// duplicates decides, for each of n delivered events, whether the
// duplicate fault delivers it again.
func (eg *eventGrid) duplicates(n int, rate float64) []bool {
	eg.rndMu.Lock()
	defer eg.rndMu.Unlock()
	out := make([]bool, n)
	for i := range out {
		out[i] = rate > 0 && eg.rnd.Float64() < rate
	}
	return out
}

// stats snapshots every subscription's counters.
func (eg *eventGrid) stats() EventGridStats {
	st := EventGridStats{Subscriptions: []EventSubscriptionStats{}}
	for _, d := range eg.deliverers() {
		c := d.counters()
		st.Subscriptions = append(st.Subscriptions, c)
		st.Delivered += c.Delivered
		st.FailedAttempts += c.FailedAttempts
		st.Dropped += c.Dropped
		st.Pending += c.Pending
	}
	sortStats(st.Subscriptions)
	return st
}

func sortStats(s []EventSubscriptionStats) {
	sort.Slice(s, func(i, j int) bool { return strings.ToLower(s[i].ID) < strings.ToLower(s[j].ID) })
}

// pendingEvent is an event on its way to one subscription.
type pendingEvent struct {
	body     json.RawMessage // rendered in the subscription's schema
	attempts int             // failed deliveries so far
	enqueued time.Time       // for the time to live
	due      time.Time       // not before
	dup      bool            // a copy the duplicate fault made
}

// deliverer delivers one subscription's events from its own goroutine.
type deliverer struct {
	eg     *eventGrid
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	spec     EventSubscription
	code     string // validation code awaited in AwaitingManualAction
	queue    []*pendingEvent
	inflight int
	count    EventSubscriptionStats
	// failStreak counts the failed deliveries in a row; delayedUntil is
	// set once it reaches EventGridOptions.DelayAfterFailures.
	failStreak   int
	delayedUntil time.Time
}

func newDeliverer(eg *eventGrid, spec EventSubscription, code string) *deliverer {
	ctx, cancel := context.WithCancel(eg.ctx)
	return &deliverer{eg: eg, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{}),
		spec: spec, code: code}
}

func (d *deliverer) config() EventSubscription {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.spec
}

func (d *deliverer) state() (string, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.spec.Properties.ProvisioningState, d.code
}

// needsHandshake reports whether an update changes what was validated.
func (d *deliverer) needsHandshake(next EventSubscription) bool {
	cur := d.config().Properties
	return cur.Destination.Properties.EndpointURL != next.Properties.Destination.Properties.EndpointURL ||
		cur.EventDeliverySchema != next.Properties.EventDeliverySchema
}

func (d *deliverer) reconfigure(spec EventSubscription, code string) {
	d.mu.Lock()
	d.spec, d.code = spec, code
	d.mu.Unlock()
	d.signal()
}

func (d *deliverer) validate(code string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.spec.Properties.ProvisioningState != provisioningAwaitingHook || !strings.EqualFold(code, d.code) {
		return false
	}
	d.spec.Properties.ProvisioningState = provisioningSucceeded
	return true
}

// signal wakes the delivery goroutine.
func (d *deliverer) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// halt stops the goroutine and waits for it.
func (d *deliverer) halt() {
	d.cancel()
	<-d.done
}

// offer queues ev if the subscription is validated, its topic holds the
// event's subject and its filter lets the event through.
func (d *deliverer) offer(ev *resourceEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.spec.Properties
	if p.ProvisioningState != provisioningSucceeded || !inScope(ev.Subject, p.Topic) || !p.Filter.matches(ev) {
		return
	}
	now := time.Now()
	d.queue = append(d.queue, &pendingEvent{body: ev.render(p.EventDeliverySchema), enqueued: now, due: now})
	d.signal()
}

func (d *deliverer) counters() EventSubscriptionStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.count
	c.ID, c.Schema = d.spec.ID, d.spec.Properties.EventDeliverySchema
	c.Endpoint = d.spec.Properties.Destination.Properties.EndpointBaseURL
	c.ProvisioningState = d.spec.Properties.ProvisioningState
	c.Pending = len(d.queue) + d.inflight
	if until := d.delayedUntil; time.Now().Before(until) {
		c.DelayedUntil = &until
	}
	return c
}

// run delivers until the subscription is deleted or the server closes.
func (d *deliverer) run() {
	defer close(d.done)
	for {
		batch, wait := d.take(d.eg.currentFaults())
		if len(batch) > 0 {
			d.deliver(batch)
			continue
		}
		if !d.sleep(wait) {
			return
		}
	}
}

// sleep waits for a signal, for wait (if positive) or for the end; false
// at the end.
func (d *deliverer) sleep(wait time.Duration) bool {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-d.ctx.Done():
		return false
	case <-d.wake:
	case <-timeout:
	}
	return true
}
