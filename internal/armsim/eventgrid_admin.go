package armsim

import (
	"context"
	"net/http"
	"time"
)

// idlePoll is how often WaitEventGridIdle looks at the queues.
const idlePoll = 5 * time.Millisecond

// EventGridStats returns every event subscription's delivery counters.
func (s *Server) EventGridStats() EventGridStats { return s.eg.stats() }

// WaitEventGridIdle waits until no event is pending (queued, in flight or
// waiting for a retry) in any subscription, or ctx ends.
func (s *Server) WaitEventGridIdle(ctx context.Context) error {
	t := time.NewTicker(idlePoll)
	defer t.Stop()
	for s.eg.stats().Pending > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// EventGridFaults returns the delivery faults in force.
func (s *Server) EventGridFaults() EventGridFaults { return s.eg.currentFaults() }

// SetEventGridFaults replaces the delivery faults; clearing Paused releases
// what queued meanwhile.
func (s *Server) SetEventGridFaults(f EventGridFaults) { s.eg.setFaults(f) }

// SetEventGridRetrySchedule replaces the retry schedule (see
// EventGridOptions.RetrySchedule; empty restores DefaultRetrySchedule).
func (s *Server) SetEventGridRetrySchedule(waits ...time.Duration) {
	if len(waits) == 0 {
		waits = DefaultRetrySchedule
	}
	s.eg.mu.Lock()
	s.eg.schedule = append([]time.Duration(nil), waits...)
	s.eg.mu.Unlock()
}

// adminEventGridStats answers GET /_admin/eventgrid[?wait=<duration>]:
// the counters, after waiting up to wait for every queue to empty (408
// with the counters if they did not).
func (s *Server) adminEventGridStats(w http.ResponseWriter, r *http.Request, _ *route) {
	status := http.StatusOK
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			adminError(w, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		if s.WaitEventGridIdle(ctx) != nil {
			status = http.StatusRequestTimeout
		}
	}
	writeJSON(w, status, s.EventGridStats())
}

// eventGridConfig is the body of GET and PUT /_admin/eventgrid/config;
// fields a PUT leaves out stay as they are. Durations are Go durations
// ("250ms").
type eventGridConfig struct {
	DuplicateRate *float64 `json:"duplicateRate,omitempty"`
	Reorder       *bool    `json:"reorder,omitempty"`
	Latency       *string  `json:"latency,omitempty"`
	Paused        *bool    `json:"paused,omitempty"`
	RetrySchedule []string `json:"retrySchedule,omitempty"`
}

func (s *Server) adminEventGridConfig(w http.ResponseWriter, _ *http.Request, _ *route) {
	f := s.EventGridFaults()
	lat := f.Latency.String()
	s.eg.mu.Lock()
	schedule := make([]string, len(s.eg.schedule))
	for i, d := range s.eg.schedule {
		schedule[i] = d.String()
	}
	s.eg.mu.Unlock()
	writeJSON(w, http.StatusOK, eventGridConfig{DuplicateRate: &f.DuplicateRate, Reorder: &f.Reorder,
		Latency: &lat, Paused: &f.Paused, RetrySchedule: schedule})
}

func (s *Server) adminSetEventGridConfig(w http.ResponseWriter, r *http.Request, _ *route) {
	var b eventGridConfig
	if err := readAdminBody(r, &b); err != nil {
		adminError(w, err)
		return
	}
	f, schedule, err := b.apply(s.EventGridFaults())
	if err != nil {
		adminError(w, err)
		return
	}
	if schedule != nil {
		s.SetEventGridRetrySchedule(schedule...)
	}
	s.SetEventGridFaults(f)
	w.WriteHeader(http.StatusNoContent)
}

// apply returns f changed by the body, and the new retry schedule if any.
func (b eventGridConfig) apply(f EventGridFaults) (EventGridFaults, []time.Duration, error) {
	if b.DuplicateRate != nil {
		f.DuplicateRate = *b.DuplicateRate
	}
	if b.Reorder != nil {
		f.Reorder = *b.Reorder
	}
	if b.Paused != nil {
		f.Paused = *b.Paused
	}
	if b.Latency != nil {
		d, err := time.ParseDuration(*b.Latency)
		if err != nil {
			return f, nil, err
		}
		f.Latency = d
	}
	var schedule []time.Duration
	for _, v := range b.RetrySchedule {
		d, err := time.ParseDuration(v)
		if err != nil {
			return f, nil, err
		}
		schedule = append(schedule, d)
	}
	return f, schedule, nil
}

// adminEventGridValidate is the validation URL of the Event Grid schema's
// handshake: its GET completes a subscription AwaitingManualAction.
func (s *Server) adminEventGridValidate(w http.ResponseWriter, r *http.Request, _ *route) {
	q := r.URL.Query()
	if !s.eg.validate(q.Get("id"), q.Get("code")) {
		writeError(w, errBadRequest("InvalidValidationCode", "No event subscription awaits validation code '%s'.", q.Get("code")))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("Webhook successfully validated as a result of user's validation response"))
}
