package cloud

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// TokenBucket is an ordinary token bucket: it holds up to Cap tokens and
// refills at Rate tokens per second. It is not safe for concurrent use:
// its owner holds a lock around it.
type TokenBucket struct {
	// Tokens are the tokens held now (as of the last Refill).
	Tokens float64
	// Cap is the most tokens it holds.
	Cap float64
	// Rate is the refill per second.
	Rate float64
	last time.Time
}

// NewTokenBucket returns a full bucket of burst tokens refilling at rate
// per second from now.
func NewTokenBucket(rate, burst float64, now time.Time) TokenBucket {
	return TokenBucket{Tokens: burst, Cap: burst, Rate: rate, last: now}
}

// Refill adds the tokens earned since the last Refill, up to Cap.
func (b *TokenBucket) Refill(now time.Time) {
	dt := now.Sub(b.last).Seconds()
	if dt <= 0 {
		return
	}
	b.last = now
	b.Tokens = math.Min(b.Cap, b.Tokens+dt*b.Rate)
}

// Delay returns how long until the bucket holds a whole token (0: now).
// Call Refill first.
func (b *TokenBucket) Delay() time.Duration {
	if b.Tokens >= 1 {
		return 0
	}
	if b.Rate <= 0 {
		return time.Duration(math.MaxInt64)
	}
	return DelayOf((1 - b.Tokens) / b.Rate)
}

// Take spends one token.
func (b *TokenBucket) Take() { b.Tokens-- }

// DelayOf turns a wait in seconds into a Duration, rounded up to at least
// a millisecond.
func DelayOf(seconds float64) time.Duration {
	return max(time.Duration(math.Ceil(seconds*float64(time.Second))), time.Millisecond)
}

// WaitTurn waits d for a budget to let a request through, or until wake
// is closed (the budget changed: look again). It fails when ctx ends
// first, and at once when ctx's deadline comes before d has passed from
// now.
func WaitTurn(ctx context.Context, now time.Time, d time.Duration, wake <-chan struct{}) error {
	if dl, ok := ctx.Deadline(); ok && dl.Sub(now) < d {
		return fmt.Errorf("the next request may leave in %s, after the context's deadline", d.Round(time.Millisecond))
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
	case <-wake:
	}
	return nil
}

// Sleep waits d or until ctx ends, and reports whether it waited d.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// RateLimiter is a client-side request budget: one TokenBucket per key
// (e.g. account, region and kind of request), all of the same rate and
// burst. It is safe for concurrent use.
type RateLimiter struct {
	rate, burst float64
	now         func() time.Time

	mu      sync.Mutex
	buckets map[string]*TokenBucket
	sent    map[string]int
}

// NewRateLimiter returns a budget of rate requests per second and burst
// per key; now is the clock (nil: time.Now).
func NewRateLimiter(rate float64, burst int, now func() time.Time) *RateLimiter {
	if now == nil {
		now = time.Now
	}
	return &RateLimiter{rate: rate, burst: float64(max(burst, 1)), now: now,
		buckets: map[string]*TokenBucket{}, sent: map[string]int{}}
}

// Wait blocks until key's bucket has a token and takes it. It fails when
// ctx ends first, or at once when ctx's deadline comes before the token.
func (l *RateLimiter) Wait(ctx context.Context, key string) error {
	for {
		l.mu.Lock()
		now := l.now()
		b := l.buckets[key]
		if b == nil {
			nb := NewTokenBucket(l.rate, l.burst, now)
			b = &nb
			l.buckets[key] = b
		}
		b.Refill(now)
		d := b.Delay()
		if d == 0 {
			b.Take()
			l.sent[key]++
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
		if err := WaitTurn(ctx, now, d, nil); err != nil {
			return fmt.Errorf("client-side budget of %s: %w", key, err)
		}
	}
}

// Sent returns how many requests the budget let through per key.
func (l *RateLimiter) Sent() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.sent))
	for k, n := range l.sent {
		out[k] = n
	}
	return out
}
