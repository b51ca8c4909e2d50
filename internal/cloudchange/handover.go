package cloudchange

import (
	"context"
	"time"
)

// Handover carries the changes a leader acknowledged but did not finish
// to the next leader: a change the webhook answered 200 for, or an SQS
// message deleted, must not wait for the hourly pass because the leader
// stopped (a rolling update, a drain), least of all where a full pass
// reads an index that lags (Resource Graph).
type Handover interface {
	// Take returns the changes a previous leader left, and clears them.
	Take(ctx context.Context) ([]Change, error)
	// Leave records changes for the next leader, replacing what was left.
	Leave(ctx context.Context, changes []Change) error
}

// Handover timing: a leader leaves its changes within handoverTimeout of
// being stopped; the changes of deliveries whose passes failed are handed
// over for failedKept after the failure (the controller retries them
// meanwhile), at most failedMax of them.
const (
	handoverTimeout = 5 * time.Second
	failedKept      = time.Hour
	failedMax       = 1000
)

// failedChange is a change whose pass failed, kept for a handover.
type failedChange struct {
	change Change
	at     time.Time
}

// takeOver publishes what a previous leader left (Start calls it first).
func (h *Hub) takeOver(ctx context.Context) {
	if h.opts.Handover == nil {
		return
	}
	changes, err := h.opts.Handover.Take(ctx)
	switch {
	case err != nil:
		h.log.Error(err, "reading the changes the previous leader left; the first full pass covers them")
		return
	case len(changes) == 0:
		return
	}
	handedOverTotal.WithLabelValues("taken").Add(float64(len(changes)))
	h.log.Info("took over the changes the previous leader had not finished", "changes", len(changes))
	if err := h.Publish(changes, nil); err != nil {
		h.log.Info("the changes the previous leader left do not fit in the queue; the first full pass covers them", "changes", len(changes))
	}
}

// leave records the unfinished changes for the next leader (Start calls
// it as it returns).
func (h *Hub) leave(ctx context.Context) {
	if h.opts.Handover == nil {
		return
	}
	changes := h.unfinished(h.opts.Clock.Now())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handoverTimeout)
	defer cancel()
	if err := h.opts.Handover.Leave(ctx, changes); err != nil {
		h.log.Error(err, "leaving the unfinished changes to the next leader; its first full pass covers them", "changes", len(changes))
		return
	}
	handedOverTotal.WithLabelValues("left").Add(float64(len(changes)))
	if len(changes) > 0 {
		h.log.Info("left the unfinished changes to the next leader", "changes", len(changes))
	}
}

// unfinished are the changes queued, routed and waiting for passes, or
// whose passes failed within failedKept, each once.
func (h *Hub) unfinished(now time.Time) []Change {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	var out []Change
	add := func(cs ...Change) {
		for _, c := range cs {
			if !seen[c.ID] {
				seen[c.ID] = true
				out = append(out, c)
			}
		}
	}
	for _, d := range h.queue {
		add(d.changes...)
	}
	for _, s := range h.subs {
		for _, ws := range s.waiting {
			for _, w := range ws {
				add(w.t.changes...)
			}
		}
	}
	for _, f := range h.failed {
		if now.Sub(f.at) <= failedKept {
			add(f.change)
		}
	}
	return out
}

// keepFailed remembers a failed delivery's changes for a handover; the
// caller holds h.mu.
func (h *Hub) keepFailed(t *tracker, now time.Time) {
	if h.opts.Handover == nil {
		return
	}
	for _, c := range t.changes {
		h.failed = append(h.failed, failedChange{change: c, at: now})
	}
	if n := len(h.failed) - failedMax; n > 0 {
		h.failed = append(h.failed[:0:0], h.failed[n:]...)
	}
}
