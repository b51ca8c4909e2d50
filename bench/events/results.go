package main

import (
	"fmt"
	"io"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// Results is everything one run measured; it is written as JSON.
type Results struct {
	benchkit.Header
	EventsFirst  *FullPass      `json:"eventsFirstPasses,omitempty"`
	Events       *LatencyResult `json:"events,omitempty"`
	Steady       *SteadyResult  `json:"steady,omitempty"`
	Load         *LoadResult    `json:"load,omitempty"`
	PollingFirst *FullPass      `json:"pollingFirstPasses,omitempty"`
	Polling      *LatencyResult `json:"polling,omitempty"`
}

// ARMCalls is what armsim served in a phase (identity requests left out).
type ARMCalls struct {
	Reads     int            `json:"reads"`
	Writes    int            `json:"writes"`
	Throttled int            `json:"throttled429"`
	ByOp      map[string]int `json:"byOperation"`
}

// FullPass is a controller process's first passes (a full read of both
// estates; nothing to write).
type FullPass struct {
	Seconds float64  `json:"seconds"`
	ARM     ARMCalls `json:"arm"`
}

// LatencyResult is goal 1 in one mode: seconds from each edit to the last
// Node labelled (node sync) or to the revert (metadata).
type LatencyResult struct {
	Mode            string    `json:"mode"`
	Edits           int       `json:"editsPerKind"`
	NodeSeconds     []float64 `json:"nodeSyncSeconds"`
	MetadataSeconds []float64 `json:"metadataSeconds"`
	NodeP50         float64   `json:"nodeSyncP50"`
	NodeP99         float64   `json:"nodeSyncP99"`
	MetadataP50     float64   `json:"metadataP50"`
	MetadataP99     float64   `json:"metadataP99"`
	// ARM is the controller's requests from the first edit until 3 s
	// after the last was in sync; ReadsPerEdit divides its reads by the
	// edits of both kinds.
	ARM          ARMCalls `json:"arm"`
	ReadsPerEdit float64  `json:"readsPerEdit"`
}

// summarise fills the percentiles and the reads per edit.
func (r *LatencyResult) summarise() {
	r.NodeP50, r.NodeP99 = percentile(r.NodeSeconds, 50), percentile(r.NodeSeconds, 99)
	r.MetadataP50, r.MetadataP99 = percentile(r.MetadataSeconds, 50), percentile(r.MetadataSeconds, 99)
	if n := len(r.NodeSeconds) + len(r.MetadataSeconds); n > 0 {
		r.ReadsPerEdit = benchkit.Round3(float64(r.ARM.Reads) / float64(n))
	}
}

// SteadyResult is goal 2: the reads of a quiet window with events on, and
// an hour extrapolated.
type SteadyResult struct {
	WindowSeconds float64  `json:"windowSeconds"`
	ARM           ARMCalls `json:"arm"`
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
	Counters map[string]int  `json:"counters"`
	ARM      ARMCalls        `json:"arm"`
	Memory   benchkit.Memory `json:"memory"`
}

// Results returns what was measured.
func (b *bench) Results() benchkit.Results { return b.res }

// Goals renders the verdicts.
func (b *bench) Goals() []benchkit.Goal {
	r := b.res
	var g []benchkit.Goal
	for _, l := range []*LatencyResult{r.Events, r.Polling} {
		if l == nil {
			continue
		}
		target := "p99 <= 5 s"
		if l.Mode == "polling" {
			target = "(reference)"
		}
		g = append(g,
			benchkit.Goal{Goal: "1. portal edit -> labels, " + l.Mode, Target: target,
				Measured: fmt.Sprintf("p50 %.2f s, p99 %.2f s (%d edits)", l.NodeP50, l.NodeP99, len(l.NodeSeconds)), Met: l.Mode == "polling" || l.NodeP99 <= 5},
			benchkit.Goal{Goal: "1. owned tag edit -> revert, " + l.Mode, Target: target,
				Measured: fmt.Sprintf("p50 %.2f s, p99 %.2f s (%d edits)", l.MetadataP50, l.MetadataP99, len(l.MetadataSeconds)), Met: l.Mode == "polling" || l.MetadataP99 <= 5})
	}
	if l := r.Events; l != nil {
		g = append(g, benchkit.Goal{Goal: "2. ARM reads per changed resource, events", Target: "<= 1",
			Measured: fmt.Sprintf("%.2f (%s)", l.ReadsPerEdit, benchkit.OpsLine(l.ARM.ByOp)), Met: l.ReadsPerEdit <= 1})
	}
	if s := r.Steady; s != nil {
		g = append(g, benchkit.Goal{Goal: fmt.Sprintf("2. ARM reads in %.0f s of steady state, events", s.WindowSeconds), Target: "0",
			Measured: fmt.Sprintf("%d; %d an hour with the 1h resync (polling: %d)", s.ARM.Reads, s.ReadsPerHour, s.PollingReadsPerHour), Met: s.ARM.Reads == 0})
	}
	if l := r.Load; l != nil {
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
	for _, f := range []struct {
		name string
		p    *FullPass
	}{{"events on", r.EventsFirst}, {"polling", r.PollingFirst}} {
		if f.p != nil {
			fmt.Fprintf(w, "First passes (%s): %.1fs; ARM %s\n", f.name, f.p.Seconds, benchkit.OpsLine(f.p.ARM.ByOp))
		}
	}
	for _, l := range []*LatencyResult{r.Events, r.Polling} {
		if l != nil {
			fmt.Fprintf(w, "Latency (%s): node sync %v; metadata %v; ARM %s (%d x 429)\n", l.Mode, l.NodeSeconds, l.MetadataSeconds, benchkit.OpsLine(l.ARM.ByOp), l.ARM.Throttled)
		}
	}
	if l := r.Load; l != nil {
		fmt.Fprintf(w, "Load: %d events posted, answers %v, %d errors; counters %v; ARM %s (%d x 429)\n", l.Posted, l.Deliveries, l.PostErrors,
			l.Counters, benchkit.OpsLine(l.ARM.ByOp), l.ARM.Throttled)
		benchkit.PrintSamples(w, 22, l.Memory.Samples)
	}
}
