package cloud

import (
	"sync"
	"time"
)

// Gates are the throttle gates of a provider, by key (a provider's scope of
// a cloud's quota): until when calls through a gate are held, and how many
// throttled answers came through it in a row, for providers whose waits grow
// while the throttling goes on. Build them with NewGates; they are safe for
// concurrent use.
type Gates[K comparable] struct {
	mu    sync.Mutex
	gates map[K]*gate
	now   func() time.Time
}

// gate is one gate's closing time and throttle streak, and when the
// streak last closed it.
type gate struct {
	until, closed time.Time
	streak        int
}

// NewGates returns gates that are all open, on the real clock.
func NewGates[K comparable]() *Gates[K] {
	return &Gates[K]{gates: map[K]*gate{}, now: time.Now}
}

// Remaining returns how long k's gate stays closed; 0 when open.
func (g *Gates[K]) Remaining(k K) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.gates[k]
	if !ok {
		return 0
	}
	return max(s.until.Sub(g.now()), 0)
}

// Close closes k's gate for d, unless it is closed for longer already.
func (g *Gates[K]) Close(k K, d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closeLocked(g.gateLocked(k), d)
}

// Throttled records a throttled answer through k's gate to a request sent
// at sent, and closes it for base, doubled for every throttled answer before
// it in a row, up to most; it returns how long the gate stays closed. The
// answer to a request sent before the streak last closed the gate (one of
// the requests already in flight then: concurrent calls throttled at once)
// is the same throttling the close covers: it does not lengthen the wait.
func (g *Gates[K]) Throttled(k K, sent time.Time, base, most time.Duration) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.gateLocked(k)
	now := g.now()
	if s.until.After(now) && s.streak > 0 && !sent.After(s.closed) {
		return s.until.Sub(now)
	}
	s.streak++
	s.closed = now
	wait := base
	for i := 1; i < s.streak && wait < most; i++ {
		wait *= 2
	}
	g.closeLocked(s, min(wait, most))
	return s.until.Sub(g.now())
}

// Answered records an answer through k's gate that was not a throttling
// error: the streak ends (the gate stays closed until its time).
func (g *Gates[K]) Answered(k K) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.gates[k]
	if !ok {
		return
	}
	if !s.until.After(g.now()) {
		delete(g.gates, k)
		return
	}
	s.streak = 0
}

// ClosedAny reports whether any gate whose key matches is closed now.
func (g *Gates[K]) ClosedAny(match func(K) bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for k, s := range g.gates {
		if s.until.After(now) && match(k) {
			return true
		}
	}
	return false
}

// Forget opens every gate whose key matches.
func (g *Gates[K]) Forget(match func(K) bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.gates {
		if match(k) {
			delete(g.gates, k)
		}
	}
}

// Now is the gates' clock's time: when a request is sent, for Throttled.
func (g *Gates[K]) Now() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now()
}

// SetClock makes the gates read the time from now (tests).
func (g *Gates[K]) SetClock(now func() time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now = now
}

// Advance moves the gates' clock forward by d (tests).
func (g *Gates[K]) Advance(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now
	g.now = func() time.Time { return now().Add(d) }
}

// gateLocked returns k's gate, made open if there is none; the caller
// holds the lock.
func (g *Gates[K]) gateLocked(k K) *gate {
	s, ok := g.gates[k]
	if !ok {
		s = &gate{}
		g.gates[k] = s
	}
	return s
}

// closeLocked closes s for d from now, unless it is closed for longer
// already; the caller holds the lock.
func (g *Gates[K]) closeLocked(s *gate, d time.Duration) {
	if until := g.now().Add(d); until.After(s.until) {
		s.until = until
	}
	if len(g.gates) > maxOpenGates {
		g.pruneLocked()
	}
}

// maxOpenGates is how many gates are kept before the open ones without a
// streak are dropped: gates keyed by resource would otherwise pile up.
const maxOpenGates = 1024

// pruneLocked drops the gates that are open and have no streak; the caller
// holds the lock.
func (g *Gates[K]) pruneLocked() {
	now := g.now()
	for k, s := range g.gates {
		if !s.until.After(now) && s.streak == 0 {
			delete(g.gates, k)
		}
	}
}
