package sqs

import (
	"sync"
	"time"
)

// hold is a published message whose done has not been called: its passes
// run. The heartbeat keeps it hidden until it has been held for the
// longest hold (expired); it stays in flight after that, so that a receive
// of it again joins it instead of publishing it anew.
type hold struct {
	message           // with the latest receipt handle
	since   time.Time // when it was received and published
	expired bool      // held for the longest hold: no longer extended
}

// holds are the messages in flight, by message ID; safe for concurrent
// use.
type holds struct {
	mu sync.Mutex
	m  map[string]*hold
}

// add starts holding m, received at now, and returns true; when m is held
// already (received again: its visibility timeout ran out while its passes
// run), it keeps m's receipt handle, the one SQS deletes it with now, and
// returns false.
func (h *holds) add(m message, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]*hold{}
	}
	if held, ok := h.m[m.id]; ok {
		held.receipt = m.receipt
		return false
	}
	h.m[m.id] = &hold{message: m, since: now}
	return true
}

// remove stops holding the message of ID id and returns it, with the
// receipt handle it was last received with.
func (h *holds) remove(id string) (message, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held, ok := h.m[id]
	if !ok {
		return message{}, false
	}
	delete(h.m, id)
	return held.message, true
}

// has reports whether the message m (its ID and receipt handle) is held
// and still extended.
func (h *holds) has(m message) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	held, ok := h.m[m.id]
	return ok && held.receipt == m.receipt && !held.expired
}

// due returns the messages to extend at now, and those held for maxHold
// or longer, once: they are no longer extended, but stay in flight.
func (h *holds) due(now time.Time, maxHold time.Duration) (extend []message, expired []hold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, held := range h.m {
		switch {
		case held.expired:
		case now.Sub(held.since) >= maxHold:
			held.expired = true
			expired = append(expired, *held)
		default:
			extend = append(extend, held.message)
		}
	}
	return extend, expired
}
