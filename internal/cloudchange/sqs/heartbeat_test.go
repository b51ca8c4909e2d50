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
// longest hold, then handed back once as expired and no longer held; a
// message done is no longer held.
func TestHoldsDue(t *testing.T) {
	start := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	var h holds
	h.add(message{id: "old", receipt: "r-old"}, start)
	h.add(message{id: "new", receipt: "r-new"}, start.Add(time.Minute))
	h.add(message{id: "done", receipt: "r-done"}, start)
	h.remove("r-done")

	extend, expired := h.due(start.Add(time.Minute+30*time.Second), time.Minute)
	if len(extend) != 1 || extend[0].id != "new" || len(expired) != 1 || expired[0].id != "old" {
		t.Fatalf("due: extend %v, expired %v; want new extended, old expired", extend, expired)
	}
	if h.has("r-old") || !h.has("r-new") || h.has("r-done") {
		t.Errorf("held after due: old %t, new %t, done %t; want only new", h.has("r-old"), h.has("r-new"), h.has("r-done"))
	}
	if extend, expired := h.due(start.Add(2*time.Minute), time.Minute); len(extend) != 0 || len(expired) != 1 || expired[0].id != "new" {
		t.Errorf("due a minute later: extend %v, expired %v; want new expired", extend, expired)
	}
}
