package sqs

import (
	"testing"
	"time"
)

// TestSetVisibility: the queue's VisibilityTimeout attribute becomes the
// timeout receives ask for and the heartbeat extends to (at least 1 s); a
// change wakes the heartbeat, the same value or an unreadable one does not.
func TestSetVisibility(t *testing.T) {
	s := &Source{visibilityChanged: make(chan struct{}, 1)}
	s.visibilitySeconds.Store(int64(DefaultVisibilityTimeout / time.Second))
	steps := []struct {
		attr  string
		want  time.Duration
		woken bool
	}{
		{"", DefaultVisibilityTimeout, false},
		{"not a number", DefaultVisibilityTimeout, false},
		{"30", DefaultVisibilityTimeout, false},
		{"120", 2 * time.Minute, true},
		{"0", minVisibility, true},
		{"1", minVisibility, false},
	}
	for _, step := range steps {
		s.setVisibility(step.attr)
		woken := false
		select {
		case <-s.visibilityChanged:
			woken = true
		default:
		}
		if got := s.visibility(); got != step.want || woken != step.woken {
			t.Errorf("after %q: visibility %s, heartbeat woken %t; want %s, %t", step.attr, got, woken, step.want, step.woken)
		}
	}
}

// TestHoldsDue: a message is extended until it has been held for the
// longest hold, then handed back once as expired and no longer extended,
// though still in flight; a message done is no longer held; a message
// received again while held keeps its new receipt handle.
func TestHoldsDue(t *testing.T) {
	start := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	var h holds
	old, recent, done := message{id: "old", receipt: "r-old"}, message{id: "new", receipt: "r-new"}, message{id: "done", receipt: "r-done"}
	h.add(old, start)
	h.add(recent, start.Add(time.Minute))
	h.add(done, start)
	h.remove("done")

	extend, expired := h.due(start.Add(time.Minute+30*time.Second), time.Minute)
	if len(extend) != 1 || extend[0].id != "new" || len(expired) != 1 || expired[0].id != "old" {
		t.Fatalf("due: extend %v, expired %v; want new extended, old expired", extend, expired)
	}
	if h.has(old) || !h.has(recent) || h.has(done) {
		t.Errorf("extended after due: old %t, new %t, done %t; want only new", h.has(old), h.has(recent), h.has(done))
	}
	if h.add(message{id: "old", receipt: "r-old-2"}, start.Add(2*time.Minute)) {
		t.Error("the expired message received again was taken for a new one")
	}
	if extend, expired := h.due(start.Add(2*time.Minute), time.Minute); len(extend) != 0 || len(expired) != 1 || expired[0].id != "new" {
		t.Errorf("due a minute later: extend %v, expired %v; want new expired, old not again", extend, expired)
	}
	if m, ok := h.remove("old"); !ok || m.receipt != "r-old-2" {
		t.Errorf("old done: %v, %t; want it with the receipt of its latest receive", m, ok)
	}
}
