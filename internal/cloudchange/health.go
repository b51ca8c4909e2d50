package cloudchange

import (
	"strings"
	"time"
)

// AddSource registers a source whose Health the hub reports. The source
// publishes to the hub (it was built with it as its Sink) and runs as a
// Runnable of its own.
//
// A source that names its cloud (Cloud() string) starts that cloud's
// silence series at 0, so the first silence after a start counts as an
// increase (a counter first seen at 1 reads as no increase).
func (h *Hub) AddSource(s Source) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sources = append(h.sources, s)
	if c, ok := s.(interface{ Cloud() string }); ok {
		for _, reason := range []string{silentEchoOverdue, silentUnannounced} {
			silencesTotal.WithLabelValues(c.Cloud(), reason).Add(0)
		}
		silentGauge.WithLabelValues(c.Cloud()).Add(0)
	}
}

// Health is the sources' health together: up while every registered source
// is up (and at least one is registered); the reason names each source that
// is down and why; Since is the latest change of any source, LastDelivery
// the latest delivery. It also sets the tagsync_events_source_up gauge.
func (h *Hub) Health() Health {
	if h == nil {
		return Health{Reason: "events are off"}
	}
	h.mu.Lock()
	sources := append([]Source(nil), h.sources...)
	h.mu.Unlock()
	if len(sources) == 0 {
		return Health{Reason: "no event source is registered"}
	}
	out := Health{Up: true}
	var down []string
	for _, s := range sources {
		sh := s.Health()
		sourceUp.WithLabelValues(s.Name()).Set(boolGauge(sh.Up))
		if !sh.Up {
			out.Up = false
			down = append(down, s.Name()+": "+orUnknown(sh.Reason))
		}
		out.Since = later(out.Since, sh.Since)
		out.LastDelivery = later(out.LastDelivery, sh.LastDelivery)
	}
	out.Reason = strings.Join(down, "; ")
	out.Silent = h.silentReason()
	return out
}

// Interval is the polling interval of an object configured to poll every
// configured: the hub's ResyncInterval (or configured, when longer) while
// every source is up and no cloud's events are silent, else configured. A
// nil Hub (events off) always says configured.
func (h *Hub) Interval(configured time.Duration) (time.Duration, Health) {
	health := h.Health()
	if !health.Up || health.Silent != "" {
		return configured, health
	}
	return max(configured, h.opts.ResyncInterval), health
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func orUnknown(reason string) string {
	if reason == "" {
		return "down, no reason given"
	}
	return reason
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
