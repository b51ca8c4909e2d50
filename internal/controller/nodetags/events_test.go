package nodetags_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/cloudchangetest"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
)

// eventsResync is the safety-net interval of the event tests' hubs.
const eventsResync = 2 * time.Hour

// newEventsHarness starts a controller that takes cloud changes from hub
// (capacity changes at most), with one source that is up. The provider
// keeps its listings for an hour, so the ARM reads a test counts are the
// ones its changes cause.
func newEventsHarness(t *testing.T, capacity int) (*harness, *cloudchange.Hub, *cloudchangetest.Source) {
	hub, src := newHub(t, capacity)
	h := newHarnessWith(t, func(h *harness) {
		h.eventOpts = operator.EventsOptions{Hub: hub, Sources: []operator.EventSource{operator.BuiltSource(src)}}
	}, azure.WithCacheTTL(time.Hour))
	return h, hub, src
}

// newHub is the event tests' hub (capacity changes at most) and its one
// source, which is up.
func newHub(t *testing.T, capacity int) (*cloudchange.Hub, *cloudchangetest.Source) {
	hub := cloudchange.NewHub(cloudchange.HubOptions{Capacity: capacity, ResyncInterval: eventsResync, HealthEvery: 20 * time.Millisecond})
	return hub, cloudchangetest.NewSource(t.Name())
}

// pool creates the resource group rg-<name> with a scale set of n
// instances tagged tags, a Node <name>-<i> labelled pool=<name> on each,
// and the NodeTagSync <name> selecting them; it waits until the Nodes
// carry the tags and returns the scale set's ID.
func (h *harness) pool(name string, n int, tags map[string]string) string {
	h.t.Helper()
	h.resourceGroup("rg-" + name)
	id, pids := h.scaleSet("rg-"+name, "pool", n, tags)
	for i, pid := range pids {
		h.node(fmt.Sprintf("%s-%d", name, i), pid, map[string]string{"pool": name}, nil)
	}
	h.sync(name, func(s *v1alpha1.NodeTagSyncSpec) {
		s.NodeSelector = &metav1LabelSelector{MatchLabels: map[string]string{"pool": name}}
	})
	for i := range n {
		for k, v := range tags {
			h.waitLabel(fmt.Sprintf("%s-%d", name, i), "azure.tags/"+k, v)
		}
	}
	h.passDone(name, int32(n))
	return id
}

// settled waits until a change for the NodeTagSync runs a targeted pass:
// its last full pass served every Node event so far.
func (h *harness) settled(names ...string) {
	h.t.Helper()
	for _, name := range names {
		h.eventually(name+" ready for targeted passes", func() string {
			if !h.rec.Targetable(name) {
				return "a full pass is due"
			}
			return ""
		})
	}
}

// write is the change Event Grid reports for a write of resource id.
func write(id, eventID string) cloudchange.Change {
	return cloudchangetest.Write("azure", id, eventID, nil)
}

// passes counts the NodeTagSync's passes so far: full and targeted.
func (h *harness) passes(name string) (full, targeted float64) {
	return testenv.Counter(h.t, "tagsync_nodetags_passes_total", map[string]string{"nodetagsync": name}),
		testenv.Counter(h.t, "tagsync_nodetags_targeted_passes_total", map[string]string{"nodetagsync": name})
}

// armReads counts the ARM reads since the last ResetCalls.
func (h *harness) armReads() map[string]int {
	out := map[string]int{}
	calls := h.cloud.Calls()
	for _, op := range calls.Ops() {
		if strings.HasSuffix(op, ".Get") || strings.HasSuffix(op, ".List") || strings.HasSuffix(op, "GetAtScope") {
			out[op] = calls.Count(op)
		}
	}
	return out
}

func TestACloudChangeRunsATargetedPassOfItsOwnerOnly(t *testing.T) {
	h, hub, _ := newEventsHarness(t, 0)
	poolA := h.pool("evt-own-a", 2, map[string]string{"env": "prod"})
	h.pool("evt-own-b", 1, map[string]string{"env": "dev"})
	h.settled("evt-own-a", "evt-own-b")
	_, targetedB := h.passes("evt-own-b")
	_, targetedA := h.passes("evt-own-a")
	syncB := h.passDone("evt-own-b", 1).Status.LastFullSyncTime

	if err := h.cloud.SetTags(poolA, map[string]string{"cost": "42"}); err != nil {
		t.Fatal(err)
	}
	h.cloud.ResetCalls()
	start := time.Now()
	if err := cloudchangetest.Publish(t, hub, waitFor, write(poolA, "change-1")); err != nil {
		t.Fatal(err)
	}
	t.Logf("change to the end of its targeted pass: %s", time.Since(start))
	// The delivery is done when the targeted pass ended: the labels are there.
	for _, n := range []string{"evt-own-a-0", "evt-own-a-1"} {
		if got := h.labels(n)["azure.tags/cost"]; got != "42" {
			t.Errorf("%s: label azure.tags/cost=%q after the change's pass, want 42", n, got)
		}
	}
	if got, want := h.armReads(), map[string]int{"VirtualMachineScaleSets.Get": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ARM reads for one changed scale set: %v, want %v", got, want)
	}
	if _, got := h.passes("evt-own-a"); got != targetedA+1 {
		t.Errorf("evt-own-a ran %v targeted passes, want 1", got-targetedA)
	}
	// (The Node writes of evt-own-a's pass wake every NodeTagSync, as any
	// Node event does: evt-own-b's pass then reads nothing from ARM.)
	if _, targeted := h.passes("evt-own-b"); targeted != targetedB {
		t.Errorf("evt-own-b ran %v targeted passes for a change of another scale set, want none", targeted-targetedB)
	}
	if got := h.passDone("evt-own-b", 1).Status.LastFullSyncTime; !got.Equal(syncB) {
		t.Errorf("evt-own-b's lastFullSyncTime moved from %v to %v", syncB, got)
	}

	// A burst of changes of one scale set before the pass starts: one
	// pass, one read.
	h.settled("evt-own-a")
	if err := h.cloud.SetTags(poolA, map[string]string{"cost": "43"}); err != nil {
		t.Fatal(err)
	}
	h.cloud.ResetCalls()
	_, targetedA = h.passes("evt-own-a")
	burst := make([]cloudchange.Change, 100)
	for i := range burst {
		burst[i] = write(poolA, fmt.Sprintf("burst-%d", i))
	}
	if err := cloudchangetest.Publish(t, hub, waitFor, burst...); err != nil {
		t.Fatal(err)
	}
	if got := h.labels("evt-own-a-1")["azure.tags/cost"]; got != "43" {
		t.Errorf("label azure.tags/cost=%q after the burst's pass, want 43", got)
	}
	if _, got := h.passes("evt-own-a"); got != targetedA+1 {
		t.Errorf("a burst of 100 changes ran %v targeted passes, want 1", got-targetedA)
	}
	if got := h.armReads(); got["VirtualMachineScaleSets.Get"] != 1 || len(got) != 1 {
		t.Errorf("ARM reads for a burst of 100 changes of one scale set: %v, want one scale-set GET", got)
	}
}

func TestTheEchoesOfItsNodeWritesAreRecognised(t *testing.T) {
	h, hub, _ := newEventsHarness(t, 0)
	pool := h.pool("evt-echo", 2, map[string]string{"env": "prod"})
	h.settled("evt-echo")
	if err := h.cloud.SetTags(pool, map[string]string{"env": "staging"}); err != nil {
		t.Fatal(err)
	}
	echoes := testenv.Counter(t, "tagsync_nodetags_node_echoes_total", nil)
	if err := cloudchangetest.Publish(t, hub, waitFor, write(pool, "echo-1")); err != nil {
		t.Fatal(err)
	}
	// Each Node write's watch event is matched to the write and consumed;
	// one that was not would stay expected (and would have run a full
	// pass of every NodeTagSync, as any other Node change does).
	for _, n := range []string{"evt-echo-0", "evt-echo-1"} {
		if got := h.labels(n)["azure.tags/env"]; got != "staging" {
			t.Fatalf("%s: azure.tags/env=%q after the change's pass, want staging", n, got)
		}
		h.eventually(n+"'s write recognised as its echo", func() string {
			if h.rec.EchoExpected(n) {
				return "the write's echo is still expected"
			}
			return ""
		})
	}
	if got := testenv.Counter(t, "tagsync_nodetags_node_echoes_total", nil); got < echoes+2 {
		t.Errorf("%v Node echoes counted, want at least 2", got-echoes)
	}
	// Edits of the labels by someone else are changes, not echoes: they
	// reach the scale set's tag.
	for _, n := range []string{"evt-echo-0", "evt-echo-1"} {
		setLabel(h, n, "azure.tags/env", "edited")
	}
	h.waitTag(pool, "env", "edited")
}

// TestAnotherReaderOfAChangeSharesTheTargetedPassRead: another controller
// reading a changed scale set for the same change (the metadata
// controller's probe, through the same provider) and the node sync's
// targeted pass make one ARM read between them, whichever reads first.
func TestAnotherReaderOfAChangeSharesTheTargetedPassRead(t *testing.T) {
	hub, src := newHub(t, 0)
	var provider aProvider
	h := newHarnessWith(t, func(h *harness) {
		h.eventOpts = operator.EventsOptions{Hub: hub, Sources: []operator.EventSource{operator.BuiltSource(src)}}
		h.provider = func() aProvider { provider = h.azureProvider(); return provider }
	}, azure.WithCacheTTL(time.Hour))
	reader := provider.(cloud.ClassifiedReader)
	pool := h.pool("evt-share", 1, map[string]string{"env": "prod"})
	h.settled("evt-share")
	change := func(env, eventID string) cloudchange.Change {
		if err := h.cloud.SetTags(pool, map[string]string{"env": env}); err != nil {
			t.Fatal(err)
		}
		h.cloud.ResetCalls()
		c := write(pool, eventID)
		c.Received = time.Now()
		return c
	}
	probe := func(c cloudchange.Change, want string) {
		t.Helper()
		res, err := reader.ReadClassified(cloud.WithReadAfter(h.ctx, c.Received), pool)
		if err != nil || res.Tags["env"] != want {
			t.Fatalf("the other reader: %+v, %v; want env=%s", res, err, want)
		}
	}
	sync := func(c cloudchange.Change, want string) {
		t.Helper()
		if err := cloudchangetest.Publish(t, hub, waitFor, c); err != nil {
			t.Fatal(err)
		}
		if got := h.labels("evt-share-0")["azure.tags/env"]; got != want {
			var n corev1.Node
			_ = h.c.Get(h.ctx, client.ObjectKey{Name: "evt-share-0"}, &n)
			full, targeted := h.passes("evt-share")
			t.Fatalf("azure.tags/env=%q after the change's pass, want %s (Node's base %s; %v full and %v targeted passes; ARM reads %v)",
				got, want, n.Annotations[v1alpha1.LastSyncedTagsAnnotation], full, targeted, h.armReads())
		}
	}
	oneRead := func(order string) {
		t.Helper()
		if got := h.armReads(); fmt.Sprint(got) != "map[VirtualMachineScaleSets.Get:1]" {
			t.Errorf("%s: ARM reads %v, want one scale-set GET", order, got)
		}
	}

	c := change("staging", "share-1")
	probe(c, "staging")
	sync(c, "staging")
	oneRead("the other reader first")

	h.settled("evt-share")
	c = change("dev", "share-2")
	sync(c, "dev")
	probe(c, "dev")
	oneRead("the targeted pass first")
}

func TestChangesThatChangeNothingWriteNothing(t *testing.T) {
	h, hub, _ := newEventsHarness(t, 0)
	pool := h.pool("evt-quiet", 2, map[string]string{"env": "prod"})
	nodes := []string{"evt-quiet-0", "evt-quiet-1"}

	// tagsync's own write: a label set on a Node goes to the scale set, and
	// the change Event Grid then reports finds nothing to do.
	setLabel(h, "evt-quiet-0", "azure.tags/team", "blue")
	h.waitTag(pool, "team", "blue")
	h.waitLabel("evt-quiet-1", "azure.tags/team", "blue")
	h.settled("evt-quiet")
	writes, versions := h.writes(), h.nodeVersions(nodes...)
	_, targeted := h.passes("evt-quiet")
	if err := cloudchangetest.Publish(t, hub, waitFor, write(pool, "own-write")); err != nil {
		t.Fatal(err)
	}
	if _, got := h.passes("evt-quiet"); got != targeted+1 {
		t.Fatalf("the change of tagsync's own write ran %v targeted passes, want 1", got-targeted)
	}
	if got := h.writes(); got != writes {
		t.Errorf("the change of tagsync's own write made %d ARM writes, want none", got-writes)
	}
	if got := h.nodeVersions(nodes...); fmt.Sprint(got) != fmt.Sprint(versions) {
		t.Errorf("the change of tagsync's own write wrote Nodes: versions %v, were %v", got, versions)
	}

	// A redelivery of that change is dropped: no pass.
	if err := cloudchangetest.Publish(t, hub, waitFor, write(pool, "own-write")); err != nil {
		t.Fatal(err)
	}
	if _, got := h.passes("evt-quiet"); got != targeted+1 {
		t.Errorf("a duplicate change ran a pass (%v targeted in all)", got-targeted)
	}

	// A change of a resource no NodeTagSync owns: done at once, no read.
	h.cloud.ResetCalls()
	other := strings.Replace(pool, "rg-evt-quiet", "rg-elsewhere", 1)
	if err := cloudchangetest.Publish(t, hub, waitFor, write(other, "unrelated")); err != nil {
		t.Fatal(err)
	}
	if got := h.armReads(); len(got) != 0 {
		t.Errorf("a change of an unowned resource read ARM: %v", got)
	}
	if got := h.writes(); got != 0 {
		t.Errorf("a change of an unowned resource made %d ARM writes", got)
	}
	if got := h.nodeVersions(nodes...); fmt.Sprint(got) != fmt.Sprint(versions) {
		t.Errorf("duplicate and unrelated changes wrote Nodes: versions %v, were %v", got, versions)
	}
}

func TestAnOverflowRunsAFreshFullPass(t *testing.T) {
	h, hub, _ := newEventsHarness(t, 1)
	pool := h.pool("evt-overflow", 1, map[string]string{"env": "prod"})
	h.settled("evt-overflow")
	full, targeted := h.passes("evt-overflow")
	if err := h.cloud.SetTags(pool, map[string]string{"cost": "7"}); err != nil {
		t.Fatal(err)
	}
	// Two changes do not fit in a queue of one: the delivery is refused
	// (its source delivers it again), and the NodeTagSync runs one full
	// pass meanwhile.
	if err := cloudchangetest.Publish(t, hub, waitFor, write(pool, "o-1"), write(pool, "o-2")); !errors.Is(err, cloudchange.ErrQueueFull) {
		t.Fatalf("a delivery that does not fit: %v, want cloudchange.ErrQueueFull", err)
	}
	h.waitLabel("evt-overflow-0", "azure.tags/cost", "7")
	// A pass is counted when it ends, after its Node writes: wait for it.
	h.eventually("a full pass after the overflow", func() string {
		if f, _ := h.passes("evt-overflow"); f <= full {
			return "no full pass counted yet"
		}
		return ""
	})
	if _, tg := h.passes("evt-overflow"); tg != targeted {
		t.Errorf("after an overflow: %v targeted passes, want a full one only", tg-targeted)
	}
}

func TestWhileASourceIsDownTheObjectsPollAtTheirInterval(t *testing.T) {
	h, _, src := newEventsHarness(t, 0)
	h.pool("evt-health", 1, map[string]string{"env": "prod"})
	eventsCondition := func(status metav1.ConditionStatus, reason string, message ...string) func(*v1alpha1.NodeTagSync) string {
		return func(nts *v1alpha1.NodeTagSync) string {
			return cloudchangetest.CheckCondition(nts.Status.Conditions, status, reason, message...)
		}
	}
	h.waitStatus("evt-health", "events on", eventsCondition(metav1.ConditionTrue, v1alpha1.ReasonEventsOn, "polling every 2h0m0s"))
	src.Set(cloudchange.Health{Reason: "the queue cannot be read: access denied"})
	h.waitStatus("evt-health", "events degraded", eventsCondition(metav1.ConditionFalse, v1alpha1.ReasonEventSourceDown,
		src.Name()+": the queue cannot be read: access denied", "polling every 5m0s"))
	if got := testenv.Counter(t, "tagsync_events_source_up", map[string]string{"source": src.Name()}); got != 0 {
		t.Errorf("tagsync_events_source_up = %v while the source is down", got)
	}
	src.Set(cloudchange.Health{Up: true})
	h.waitStatus("evt-health", "events on again", eventsCondition(metav1.ConditionTrue, v1alpha1.ReasonEventsOn, "polling every 2h0m0s"))
}

// TestAThrottledTargetedPassLeavesItsDeliveryUndone: a targeted pass that
// cannot read the changed scale set (throttled) keeps the change for its
// retry, and its delivery is done with cloudchange.ErrKeptForRetry, not
// acknowledged (an SQS message stays on its queue). Delivered again once
// the cloud answers, the change is taken, not dropped as a redelivery,
// and reaches the labels.
func TestAThrottledTargetedPassLeavesItsDeliveryUndone(t *testing.T) {
	h, hub, _ := newEventsHarness(t, 0)
	pool := h.pool("evt-throttled", 1, map[string]string{"env": "prod"})
	h.settled("evt-throttled")
	if err := h.cloud.SetTags(pool, map[string]string{"cost": "7"}); err != nil {
		t.Fatal(err)
	}
	h.cloud.AddFault(armsim.Fault{Operation: "VirtualMachineScaleSets.Get", Status: http.StatusTooManyRequests, RetryAfter: 20 * time.Millisecond})
	err := cloudchangetest.Publish(t, hub, waitFor, write(pool, "throttled-1"))
	if !errors.Is(err, cloudchange.ErrKeptForRetry) {
		t.Fatalf("the delivery of a change whose pass was throttled is done with %v, want %v", err, cloudchange.ErrKeptForRetry)
	}
	h.cloud.ClearFaults()
	// Delivered again (as SQS and Event Grid do) until a pass took it: the
	// provider may wait out the throttling a little longer.
	h.eventually("the change delivered again and done", func() string {
		if err := cloudchangetest.Publish(t, hub, waitFor, write(pool, "throttled-1")); err != nil {
			return err.Error()
		}
		return ""
	})
	if got := h.labels("evt-throttled-0")["azure.tags/cost"]; got != "7" {
		t.Errorf("label azure.tags/cost=%q after the redelivered change's pass, want 7", got)
	}
}
