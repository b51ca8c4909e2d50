package sqs

import (
	"sync"
	"time"
)

// hold is a published message whose done has not been called: the
// heartbeat keeps it hidden.
type hold struct {
	message
	since time.Time // when it was received and published
}

// holds are the messages the heartbeat keeps hidden, by receipt handle;
// safe for concurrent use.
type holds struct {
	mu sync.Mutex
	m  map[string]hold
}

// add starts holding m, received at now.
func (h *holds) add(m message, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]hold{}
	}
	h.m[m.receipt] = hold{message: m, since: now}
}

// remove stops holding the message of receipt.
func (h *holds) remove(receipt string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, receipt)
}

// has reports whether the message of receipt is held.
func (h *holds) has(receipt string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.m[receipt]
	return ok
}

// due returns the messages to extend at now, and stops holding (and
// returns) those held for maxHold or longer.
func (h *holds) due(now time.Time, maxHold time.Duration) (extend []message, expired []hold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for receipt, held := range h.m {
		if now.Sub(held.since) >= maxHold {
			expired = append(expired, held)
			delete(h.m, receipt)
			continue
		}
		extend = append(extend, held.message)
	}
	return extend, expired
}
