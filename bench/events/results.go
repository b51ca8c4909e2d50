package main

import (
	"fmt"
	"io"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// Results returns what was measured.
func (b *bench) Results() benchkit.Results { return b.res }

// Results is everything one run measured; it is written as JSON.
type Results struct {
	benchkit.Header
	// Events is the process with events on (goals 1, 2 and 3), Polling
	// the one without (goal 1's reference).
	Events  *ModeResult `json:"events,omitempty"`
	Polling *ModeResult `json:"polling,omitempty"`
	// HA is the ha scenario: two replicas behind one address.
	HA *HAResult `json:"ha,omitempty"`
}

// ModeResult is one controller process: its first passes and its
// scenarios.
type ModeResult struct {
	First   FirstPasses    `json:"firstPasses"`
	Latency *LatencyResult `json:"latency,omitempty"`
	Steady  *SteadyResult  `json:"steady,omitempty"`
	Load    *LoadResult    `json:"load,omitempty"`
	Silent  *SilentResult  `json:"silent,omitempty"`
	Lag     *LagResult     `json:"lag,omitempty"`
}

// FirstPasses are a process's first passes: a full read of both estates,
// nothing to write; seconds from the start of the process until they were
// done.
type FirstPasses struct {
	Seconds float64           `json:"seconds"`
	ARM     benchkit.ARMTally `json:"arm"`
}

// LatencyResult is goal 1 in one mode (benchkit.Azure.Latency).
type LatencyResult = benchkit.EditLatency

// SteadyResult is goal 2: the reads of a quiet window with events on, and
// an hour extrapolated.
type SteadyResult struct {
	WindowSeconds float64           `json:"windowSeconds"`
	ARM           benchkit.ARMTally `json:"arm"`
	// FullPassReads are the reads of one full pass of both objects (the
	// first passes); ReadsPerHour is the window's rate an hour plus one
	// full pass (--events-resync-interval 1h); PollingReadsPerHour is a
	// full pass every -poll.
	FullPassReads       int `json:"fullPassReads"`
	ReadsPerHour        int `json:"readsPerHour"`
	PollingReadsPerHour int `json:"pollingReadsPerHour"`
}

// LoadResult is goal 3.
type LoadResult struct {
	RatePerMinute int     `json:"eventsPerMinute"`
	Seconds       float64 `json:"seconds"`
	Posted        int     `json:"eventsPosted"`
	// Deliveries counts the webhook's answers by HTTP status.
	Deliveries map[int]int `json:"deliveriesByStatus"`
	PostErrors int         `json:"postErrors"`
	// Edits are armsim's real outside edits during the load; InSyncSeconds
	// is from the start of the load until every one was in sync.
	Edits         int     `json:"edits"`
	InSyncSeconds float64 `json:"inSyncSeconds"`
	QueueCapacity int     `json:"queueCapacity"`
	// MaxQueue is the highest tagsync_events_queue_length seen (every 250 ms).
	MaxQueue int `json:"maxQueueLength"`
	// Counters are the controller's counters over the load.
	Counters map[string]int    `json:"counters"`
	ARM      benchkit.ARMTally `json:"arm"`
	Memory   benchkit.Memory   `json:"memory"`
}

// Goals renders the verdicts.
func (b *bench) Goals() []benchkit.Goal {
	r := b.res
	var g []benchkit.Goal
	for _, m := range []struct {
		name string
		r    *ModeResult
	}{{"events", r.Events}, {"polling", r.Polling}} {
		if m.r == nil || m.r.Latency == nil {
			continue
		}
		l, events := m.r.Latency, m.name == "events"
		target := "p99 <= 5 s"
		if !events {
			target = "(reference)"
		}
		g = append(g,
			benchkit.Goal{Goal: "1. portal edit -> labels, " + m.name, Target: target, Measured: l.Node.String(), Met: !events || l.Node.P99 <= 5},
			benchkit.Goal{Goal: "1. owned tag edit -> revert, " + m.name, Target: target, Measured: l.Metadata.String(), Met: !events || l.Metadata.P99 <= 5})
		if events {
			g = append(g, benchkit.Goal{Goal: "2. ARM reads per changed resource, events", Target: "<= 1",
				Measured: fmt.Sprintf("%.2f (%s)", l.ReadsPerEdit, benchkit.OpsLine(l.ARM.ByOp)), Met: l.ReadsPerEdit <= 1})
		}
	}
	g = append(g, haGoals(r.HA)...)
	if r.Events == nil {
		return g
	}
	if s := r.Events.Steady; s != nil {
		g = append(g, benchkit.Goal{Goal: fmt.Sprintf("2. ARM reads in %.0f s of steady state, events", s.WindowSeconds), Target: "0",
			Measured: fmt.Sprintf("%d; %d an hour with the 1h resync (polling: %d)", s.ARM.Reads, s.ReadsPerHour, s.PollingReadsPerHour), Met: s.ARM.Reads == 0})
	}
	if l := r.Events.Lag; l != nil {
		g = append(g, benchkit.Goal{Goal: fmt.Sprintf("5. newly classified resource tagged, %.0f s index delay", l.IndexDelaySeconds), Target: "p99 <= 5 s",
			Measured: l.Tagged.String(), Met: len(l.Tagged.Seconds) == lagDisks && l.Tagged.P99 <= 5})
	}
	if s := r.Events.Silent; s != nil {
		bound := s.SilentAfterSeconds + 15
		g = append(g, benchkit.Goal{Goal: "4. silent outage noticed, polling resumed", Target: fmt.Sprintf("<= %.0f s (silent-after + 15 s)", bound),
			Measured: fmt.Sprintf("noticed %.1f s, polling %.1f s after; events on %.1f s after they return", s.NoticedSeconds, s.FallbackSeconds, s.RecoveredSeconds),
			Met:      s.FallbackSeconds <= bound})
	}
	if l := r.Events.Load; l != nil {
		g = append(g,
			benchkit.Goal{Goal: fmt.Sprintf("3. load %d events/min for %.0f s: RSS", l.RatePerMinute, l.Seconds), Target: fmt.Sprintf("bounded (<= %.0f MiB)", l.Memory.GoalMiB),
				Measured: fmt.Sprintf("peak %.1f MiB, settled %.1f MiB", l.Memory.PeakRSSMiB, l.Memory.RSSMiB), Met: l.Memory.Met},
			benchkit.Goal{Goal: "3. load: hub queue", Target: fmt.Sprintf("<= %d", l.QueueCapacity),
				Measured: fmt.Sprintf("max %d; %d overflows", l.MaxQueue, l.Counters["tagsync_events_overflows_total"]), Met: l.MaxQueue <= l.QueueCapacity},
			benchkit.Goal{Goal: "3. load: outside edits in sync", Target: "all",
				Measured: fmt.Sprintf("%d of %d, %.1f s after the start", l.Edits, l.Edits, l.InSyncSeconds), Met: true})
	}
	return g
}

// Report prints what the verdict table does not say.
func (b *bench) Report(w io.Writer) {
	r := b.res
	reportMode(w, "events on", r.Events)
	reportMode(w, "polling", r.Polling)
	if h := r.HA; h != nil && h.Served != nil {
		fmt.Fprintf(w, "Two replicas: node sync %v; metadata %v; deliveries by replica %v\n", h.Served.Node.Seconds, h.Served.Metadata.Seconds, h.ByReplica)
		if h.Kill != nil {
			fmt.Fprintf(w, "Across the leader kill (takeover %.1f s): node sync %v; metadata %v\n", h.TakeoverSeconds, h.Kill.Node.Seconds, h.Kill.Metadata.Seconds)
		}
	}
	if r.Events == nil {
		return
	}
	if l := r.Events.Load; l != nil {
		fmt.Fprintf(w, "Load: %d events posted, answers %v, %d errors; counters %v; ARM %s (%d x 429)\n", l.Posted, l.Deliveries, l.PostErrors,
			l.Counters, benchkit.OpsLine(l.ARM.ByOp), l.ARM.Throttled)
		benchkit.PrintSamples(w, 22, l.Memory.Samples)
	}
}

// reportMode prints a controller process's first passes and latencies.
func reportMode(w io.Writer, name string, m *ModeResult) {
	if m != nil {
		fmt.Fprintf(w, "First passes (%s): %.1fs; ARM %s\n", name, m.First.Seconds, benchkit.OpsLine(m.First.ARM.ByOp))
		if l := m.Latency; l != nil {
			fmt.Fprintf(w, "Latency (%s): node sync %v; metadata %v; ARM %s (%d x 429)\n", name, l.Node.Seconds, l.Metadata.Seconds, benchkit.OpsLine(l.ARM.ByOp), l.ARM.Throttled)
		}
	}
}
