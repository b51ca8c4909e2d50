package cloudchange

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

const (
	vmA = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/a"
	vmB = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/b"
)

// silenceHub is a hub with one source that is up, one subscriber, and a
// fake clock; every judgement is CheckHealth's.
func silenceHub(t *testing.T) (*Hub, *routes, *Subscription, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC))
	h := NewHub(HubOptions{Clock: clk, SilentAfter: 10 * time.Minute, ResyncInterval: time.Hour})
	h.AddSource(&fixedSource{name: "eventgrid", health: Health{Up: true}})
	r := &routes{owners: map[string][]string{vmA: {"sync-a"}, vmB: {"sync-a"}}}
	sub := h.Subscribe("nodetags", r)
	h.CheckHealth()
	return h, r, sub, clk
}

// interval is the interval of an object configured to poll every 5 min.
func interval(h *Hub) time.Duration { every, _ := h.Interval(5 * time.Minute); return every }

func TestAWriteWhoseEchoDoesNotComeMakesTheCloudSilentUntilAnEventArrives(t *testing.T) {
	h, r, _, clk := silenceHub(t)
	own := h.OwnWrites()
	w := cloud.Writer{Controller: "metadata", Object: "ns/cm"}

	// A write whose echo comes in time: nothing.
	own.Record("op-1", w)
	own.Written("op-1", "azure", vmA, clk.Now())
	clk.Step(time.Minute)
	h.Publish([]Change{{Cloud: "azure", Resource: vmA, Kind: KindWrite, ID: "e1", Operation: "op-1"}}, nil)
	h.Drain()
	clk.Step(20 * time.Minute)
	h.CheckHealth()
	if got := h.Health(); got.Silent != "" || interval(h) != time.Hour {
		t.Fatalf("after an echo in time: silent %q, interval %s", got.Silent, interval(h))
	}

	// A write whose echo comes before its answer: nothing either.
	own.Record("op-early", w)
	h.Publish([]Change{{Cloud: "azure", Resource: vmA, Kind: KindWrite, ID: "e-early", Operation: "op-early"}}, nil)
	h.Drain()
	own.Written("op-early", "azure", vmA, clk.Now())
	clk.Step(20 * time.Minute)
	h.CheckHealth()
	if got := h.Health(); got.Silent != "" || own.Awaited() != 0 {
		t.Fatalf("after an echo before the answer: silent %q, %d awaited", got.Silent, own.Awaited())
	}

	// A write whose echo does not come: silent once it is overdue.
	own.Record("op-2", w)
	own.Written("op-2", "azure", vmB, clk.Now())
	clk.Step(9 * time.Minute)
	h.CheckHealth()
	if got := h.Health(); got.Silent != "" {
		t.Fatalf("silent before the echo is overdue: %q", got.Silent)
	}
	overflows := r.overflows
	clk.Step(2 * time.Minute)
	h.CheckHealth()
	if got := h.Health(); !strings.Contains(got.Silent, "azure events silent") || !strings.Contains(got.Silent, strings.ToLower(vmB)) && !strings.Contains(got.Silent, vmB) {
		t.Fatalf("silent %q, want azure silent naming %s", got.Silent, vmB)
	}
	if got := interval(h); got != 5*time.Minute {
		t.Errorf("interval while silent: %s, want the configured 5m", got)
	}
	if r.overflows != overflows+1 {
		t.Errorf("the silence asked for %d full passes, want 1", r.overflows-overflows)
	}

	// Any event of the cloud ends it.
	h.Publish([]Change{{Cloud: "azure", Resource: vmA, Kind: KindWrite, ID: "e2"}}, nil)
	h.Drain()
	h.CheckHealth()
	if got := h.Health(); got.Silent != "" || interval(h) != time.Hour {
		t.Fatalf("after an event: silent %q, interval %s", got.Silent, interval(h))
	}
	if r.overflows != overflows+2 {
		t.Errorf("the recovery asked for %d full passes, want 1", r.overflows-overflows-1)
	}
}

func TestAnOverdueEchoOfATypeEventsNeverNamedIsNoSilence(t *testing.T) {
	h, _, _, clk := silenceHub(t)
	h.Publish([]Change{{Cloud: "azure", Resource: vmA, Kind: KindWrite, ID: "e1"}}, nil)
	h.Drain()
	disk := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/d"
	h.OwnWrites().Record("op-1", cloud.Writer{Controller: "metadata", Object: "ns/cm"})
	h.OwnWrites().Written("op-1", "azure", disk, clk.Now().Add(time.Second))
	clk.Step(time.Hour)
	h.CheckHealth()
	if got := h.Health(); got.Silent != "" {
		t.Fatalf("a disk's write unechoed, where the subscription delivers only VMs: silent %q", got.Silent)
	}
}

func TestAFullPassThatFindsAChangeNoEventAnnouncedMakesTheCloudSilent(t *testing.T) {
	h, _, sub, clk := silenceHub(t)
	// Events of VMs arrive: the type is judged.
	h.Publish([]Change{{Cloud: "azure", Resource: vmB, Kind: KindWrite, ID: "e0"}}, nil)
	h.Drain()

	sub.Saw("azure", vmA, tags.Set{"env": "prod"}, clk.Now())
	clk.Step(time.Hour)
	// An announced change: nothing.
	h.Publish([]Change{{Cloud: "azure", Resource: vmA, Kind: KindWrite, ID: "e1"}}, nil)
	h.Drain()
	clk.Step(time.Minute)
	sub.Saw("azure", vmA, tags.Set{"env": "dev"}, clk.Now())
	clk.Step(time.Hour)
	h.CheckHealth()
	if got := h.Health(); got.Silent != "" {
		t.Fatalf("an announced change: silent %q", got.Silent)
	}

	// A change whose event arrives after the pass read it: nothing.
	sub.Saw("azure", vmA, tags.Set{"env": "test"}, clk.Now())
	clk.Step(time.Minute)
	h.Publish([]Change{{Cloud: "azure", Resource: vmA, Kind: KindWrite, ID: "e2"}}, nil)
	h.Drain()
	clk.Step(time.Hour)
	h.CheckHealth()
	if got := h.Health(); got.Silent != "" {
		t.Fatalf("a change whose event came late: silent %q", got.Silent)
	}

	// A change no event announced: silent once no event came within the bound.
	sub.Saw("azure", vmA, tags.Set{"env": "edited"}, clk.Now())
	clk.Step(9 * time.Minute)
	h.CheckHealth()
	if got := h.Health(); got.Silent != "" {
		t.Fatalf("silent before the bound: %q", got.Silent)
	}
	clk.Step(2 * time.Minute)
	h.CheckHealth()
	if got := h.Health(); !strings.Contains(got.Silent, "without an event") {
		t.Fatalf("silent %q, want the unannounced change", got.Silent)
	}
	if got := interval(h); got != 5*time.Minute {
		t.Errorf("interval while silent: %s, want 5m", got)
	}
}

// cloudSource is a source that names its cloud.
type cloudSource struct {
	fixedSource
	cloud string
}

func (s *cloudSource) Cloud() string { return s.cloud }

// A source that names its cloud starts that cloud's silence series at 0,
// so that increase() counts the first silence after a start.
func TestASourceStartsItsCloudsSilenceSeriesAtZero(t *testing.T) {
	h := NewHub(HubOptions{})
	h.AddSource(&cloudSource{fixedSource: fixedSource{name: "test-src"}, cloud: "testcloud"})
	for _, reason := range []string{silentEchoOverdue, silentUnannounced} {
		m := &dto.Metric{}
		if err := silencesTotal.WithLabelValues("testcloud", reason).Write(m); err != nil {
			t.Fatal(err)
		}
		if m.GetCounter() == nil || m.GetCounter().GetValue() != 0 {
			t.Errorf("silences_total{cloud=testcloud,reason=%s} = %v, want a series at 0", reason, m.GetCounter())
		}
	}
	if n := testutil.CollectAndCount(silencesTotal, "tagsync_events_silences_total"); n < 2 {
		t.Errorf("%d silences_total series, want the cloud's two", n)
	}
}

// Each subscription's events come by their own event subscription: one
// that stops delivering is silent although another delivers all along.
func TestOneSilentSubscriptionIsNoticedBesideOneThatDelivers(t *testing.T) {
	h, _, _, clk := silenceHub(t)
	own := h.OwnWrites()
	w := cloud.Writer{Controller: "metadata", Object: "ns/cm"}
	quiet := "/subscriptions/deleted/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/q"
	busy := vmA // subscription s
	before := testutil.ToFloat64(silentGauge.WithLabelValues("azure"))

	own.Record("op-quiet", w)
	own.Written("op-quiet", "azure", quiet, clk.Now())
	for i := range 12 { // subscription s delivers every minute
		clk.Step(time.Minute)
		h.Publish([]Change{{Cloud: "azure", Resource: busy, Kind: KindWrite, ID: "busy-" + string(rune('a'+i))}}, nil)
		h.Drain()
		h.CheckHealth()
	}
	got := h.Health().Silent
	if !strings.Contains(got, "azure events silent (subscription deleted)") || strings.Contains(got, "subscription s)") {
		t.Fatalf("silent %q, want the deleted subscription silent and s not", got)
	}
	if n := testutil.ToFloat64(silentGauge.WithLabelValues("azure")) - before; n != 1 {
		t.Errorf("tagsync_events_silent{cloud=azure} rose by %v, want 1 silent stream", n)
	}
	h.Publish([]Change{{Cloud: "azure", Resource: quiet, Kind: KindWrite, ID: "quiet-back"}}, nil)
	h.Drain()
	if got := h.Health().Silent; got != "" {
		t.Errorf("after an event of the deleted subscription: silent %q", got)
	}
	if n := testutil.ToFloat64(silentGauge.WithLabelValues("azure")); n != before {
		t.Errorf("tagsync_events_silent{cloud=azure} = %v after the silence ended, want %v", n, before)
	}
}
