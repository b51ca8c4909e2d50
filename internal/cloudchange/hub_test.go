package cloudchange

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
)

// routes is a Router that maps resources to object keys, as a controller's
// index does, and counts what it was asked.
type routes struct {
	owners    map[string][]string
	routed    []Change
	overflows int
}

func (r *routes) Route(c Change) []string {
	r.routed = append(r.routed, c)
	var keys []string
	for _, k := range r.owners[c.Resource] {
		if k != c.EchoOf {
			keys = append(keys, k)
		}
	}
	return keys
}

func (r *routes) Overflow() { r.overflows++ }

// result records the one call of a delivery's done.
type result struct {
	calls int
	err   error
}

func (r *result) done(err error) { r.calls++; r.err = err }

func change(id, resource string) Change {
	return Change{Cloud: "azure", Resource: resource, Kind: KindWrite, ID: id, Source: "test"}
}

func newTestHub(capacity int) (*Hub, *routes, *Subscription) {
	h := NewHub(HubOptions{Capacity: capacity})
	r := &routes{owners: map[string][]string{"/ss/a": {"sync-a"}, "/ss/shared": {"sync-a", "sync-b"}}}
	return h, r, h.Subscribe("metadata", r)
}

// routedChange is a hub that routed one change of /ss/a to sync-a, and
// that change's delivery.
func routedChange() (*Hub, *routes, *Subscription, *result) {
	h, r, sub := newTestHub(10)
	res := &result{}
	h.Publish([]Change{change("1", "/ss/a")}, res.done)
	h.Drain()
	return h, r, sub, res
}

func TestADeliveryIsDoneWhenThePassesItTriggeredEnd(t *testing.T) {
	h, _, sub := newTestHub(10)
	var res result
	h.Publish([]Change{change("1", "/ss/shared")}, res.done)
	h.Drain()
	endA := sub.Started("sync-a")
	endB := sub.Started("sync-b")
	endA(nil)
	if res.calls != 0 {
		t.Fatal("done before every pass the delivery triggered ended")
	}
	endB(nil)
	if res.calls != 1 || res.err != nil {
		t.Fatalf("done called %d times with %v, want once with nil", res.calls, res.err)
	}
}

// The echo of an object's own write reaches every other object, of its
// controller and of the others, and not the writer: the writer's
// controller is told which object wrote (Change.EchoOf).
func TestTheEchoOfAnObjectsWriteSkipsOnlyThatObject(t *testing.T) {
	own := cloud.NewOwnWrites(10)
	h := NewHub(HubOptions{OwnWrites: own})
	metadata := &routes{owners: map[string][]string{"/vm/1": {"ns/writer", "ns/other"}}}
	nodetags := &routes{owners: map[string][]string{"/vm/1": {"nts"}}}
	sub := h.Subscribe("metadata", metadata)
	h.Subscribe("nodetags", nodetags)
	own.Record("op-1", cloud.Writer{Controller: "metadata", Object: "ns/writer"})
	echo, outside := change("1", "/vm/1"), change("2", "/vm/1")
	echo.Operation, outside.Operation = "op-1", "op-2"
	var res result
	h.Publish([]Change{echo}, res.done)
	h.Drain()
	if got := metadata.routed[0].EchoOf; got != "ns/writer" || nodetags.routed[0].EchoOf != "" {
		t.Fatalf("the echo was routed as the echo of %q to metadata and of %q to nodetags; want ns/writer and none",
			got, nodetags.routed[0].EchoOf)
	}
	// The delivery waits for the passes of ns/other and nts only.
	sub.Started("ns/other")(nil)
	if res.calls != 0 {
		t.Fatal("done before the node sync's pass")
	}
	h.subs[1].Started("nts")(nil)
	if res.calls != 1 {
		t.Fatalf("done %d times after the passes of every object but the writer, want once", res.calls)
	}
	h.Publish([]Change{outside}, res.done)
	h.Drain()
	if got := metadata.routed[1].EchoOf; got != "" {
		t.Fatalf("an outside change was routed as the echo of %q", got)
	}
}

func TestARepublishedChangeReachesOnlyTheRepublisher(t *testing.T) {
	h, other, _ := newTestHub(10)
	prober := &routes{owners: map[string][]string{"/ss/a": {"object"}}}
	s := h.Subscribe("prober", prober)
	var res result
	s.Republish([]Change{change("", "/ss/a")}, res.done)
	h.Drain()
	if len(other.routed) != 0 || len(prober.routed) != 1 {
		t.Fatalf("routed to the other subscriber %d times, to the republisher %d times; want 0 and 1", len(other.routed), len(prober.routed))
	}
	s.Started("object")(nil)
	if res.calls != 1 || res.err != nil {
		t.Fatalf("the republish is done %d times (err %v) after its pass, want once", res.calls, res.err)
	}
}

func TestAPassThatStartedBeforeTheChangeDoesNotServeIt(t *testing.T) {
	h, _, sub := newTestHub(10)
	res := &result{}
	early := sub.Started("sync-a")
	h.Publish([]Change{change("1", "/ss/a")}, res.done)
	h.Drain()
	early(nil)
	if res.calls != 0 || sub.Waiting("sync-a") != 1 {
		t.Fatalf("a pass that started before the change released it (done %d, waiting %d)", res.calls, sub.Waiting("sync-a"))
	}
	sub.Started("sync-a")(nil)
	if res.calls != 1 {
		t.Fatal("the next pass did not release the change")
	}
}

func TestAFailedPassFailsTheDeliveryAndLetsItsRedeliveryIn(t *testing.T) {
	h, r, sub, res := routedChange()
	sub.Started("sync-a")(errors.New("throttled"))
	if res.calls != 1 || res.err == nil {
		t.Fatalf("done called %d times with %v, want once with the pass's error", res.calls, res.err)
	}
	h.Publish([]Change{change("1", "/ss/a")}, (&result{}).done)
	h.Drain()
	if len(r.routed) != 2 {
		t.Fatalf("the redelivery of a failed change was dropped: routed %d", len(r.routed))
	}
}

func TestChangesNoObjectOwnsAreDoneAtOnce(t *testing.T) {
	h, r, _ := newTestHub(10)
	var res result
	h.Publish([]Change{change("1", "/ss/unknown")}, res.done)
	h.Drain()
	if res.calls != 1 || res.err != nil || len(r.routed) != 1 {
		t.Fatalf("done %d (%v), routed %d: want done at once", res.calls, res.err, len(r.routed))
	}
}

func TestRecentDuplicatesAreDropped(t *testing.T) {
	h, r, sub := newTestHub(10)
	var first, again result
	h.Publish([]Change{change("1", "/ss/a")}, first.done)
	h.Publish([]Change{change("1", "/ss/a")}, again.done)
	h.Drain()
	if len(r.routed) != 1 || again.calls != 1 || again.err != nil {
		t.Fatalf("routed %d, duplicate done %d: want the duplicate dropped and done at once", len(r.routed), again.calls)
	}
	sub.Started("sync-a")(nil)
	if first.calls != 1 {
		t.Fatal("the original delivery was not done")
	}
}

func TestTheRecentIDsAreBounded(t *testing.T) {
	h, r, _ := newTestHub(2)
	for _, id := range []string{"1", "2", "3", "1"} {
		h.Publish([]Change{change(id, "/ss/unknown")}, nil)
		h.Drain()
	}
	if len(r.routed) != 4 {
		t.Fatalf("routed %d changes, want 4: an ID older than the last 2 is not a duplicate", len(r.routed))
	}
}

// A delivery that does not fit is refused, never acknowledged (its source
// delivers it again), and taken when it comes again with room.
func TestOverflowRefusesTheDeliveryAndAsksForOneFullPass(t *testing.T) {
	h, r, _ := newTestHub(2)
	var kept, refused1, refused2, again result
	if err := h.Publish([]Change{change("1", "/ss/a"), change("2", "/ss/a")}, kept.done); err != nil {
		t.Fatalf("a delivery that fits: %v", err)
	}
	err1 := h.Publish([]Change{change("3", "/ss/a")}, refused1.done)
	err2 := h.Publish([]Change{change("4", "/ss/a")}, refused2.done)
	if !errors.Is(err1, ErrQueueFull) || !errors.Is(err2, ErrQueueFull) {
		t.Fatalf("deliveries that do not fit: %v, %v; want ErrQueueFull", err1, err2)
	}
	if refused1.calls != 0 || refused2.calls != 0 || kept.calls != 0 {
		t.Fatalf("refused deliveries done %d/%d times, kept %d: a refused delivery is never done", refused1.calls, refused2.calls, kept.calls)
	}
	h.Drain()
	if r.overflows != 1 || len(r.routed) != 2 {
		t.Fatalf("overflows %d, routed %d: want one full pass and the kept changes routed", r.overflows, len(r.routed))
	}
	h.Drain()
	if r.overflows != 1 {
		t.Fatal("an overflow asked for more than one full pass")
	}
	if err := h.Publish([]Change{change("3", "/ss/a")}, again.done); err != nil {
		t.Fatalf("the refused delivery again, with room: %v", err)
	}
	h.Drain()
	if len(r.routed) != 3 {
		t.Fatalf("routed %d changes, want the redelivered one routed too (not taken for a duplicate)", len(r.routed))
	}
}

func TestAForgottenObjectReleasesItsChanges(t *testing.T) {
	_, _, sub, res := routedChange()
	sub.Forget("sync-a")
	if res.calls != 1 || res.err != nil {
		t.Fatalf("done %d (%v) after the object was deleted, want once with nil", res.calls, res.err)
	}
}

func TestStartRoutesUntilTheContextEnds(t *testing.T) {
	h, _, _ := newTestHub(10)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- h.Start(ctx) }()
	got := make(chan error, 1)
	h.Publish([]Change{change("1", "/ss/unknown")}, func(err error) { got <- err })
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// fixedSource is a Source whose health a test sets.
type fixedSource struct {
	name   string
	health Health
}

func (s *fixedSource) Name() string                    { return s.name }
func (s *fixedSource) Start(ctx context.Context) error { <-ctx.Done(); return nil }
func (s *fixedSource) Health() Health                  { return s.health }

func TestTheIntervalFallsBackWhileASourceIsDown(t *testing.T) {
	h := NewHub(HubOptions{ResyncInterval: time.Hour})
	configured := 5 * time.Minute
	if got, health := h.Interval(configured); got != configured || health.Up {
		t.Fatalf("without sources: %s (up %v), want the configured interval", got, health.Up)
	}
	grid := &fixedSource{name: "eventgrid", health: Health{Up: true}}
	queue := &fixedSource{name: "sqs", health: Health{Up: true}}
	h.AddSource(grid)
	h.AddSource(queue)
	if got, health := h.Interval(configured); got != time.Hour || !health.Up {
		t.Fatalf("every source up: %s (up %v), want the resync interval", got, health.Up)
	}
	r := &routes{}
	h.Subscribe("nodetags", r)
	h.CheckHealth()
	if got, _ := h.Interval(2 * time.Hour); got != 2*time.Hour {
		t.Fatalf("a configured interval longer than the resync: %s, want the configured one", got)
	}
	queue.health = Health{Reason: "ReceiveMessage: access denied"}
	got, health := h.Interval(configured)
	if got != configured || health.Up || !strings.Contains(health.Reason, "sqs: ReceiveMessage: access denied") {
		t.Fatalf("a source down: %s, %+v; want the configured interval and the source named", got, health)
	}
	h.CheckHealth()
	if r.overflows != 1 {
		t.Fatalf("a source going down asked for %d full passes, want 1", r.overflows)
	}
	h.CheckHealth()
	if r.overflows != 1 {
		t.Fatal("unchanged health asked for another full pass")
	}
	var off *Hub
	if got, health := off.Interval(configured); got != configured || health.Up {
		t.Fatalf("events off: %s (up %v)", got, health.Up)
	}
}
