package azure

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
)

// The client-side budget follows ARM's own throttling. ARM keeps a token
// bucket per subscription (and principal) for each of reads, writes and
// deletes, and reports on every answer how many tokens the bucket has left
// after that request, in x-ms-ratelimit-remaining-subscription-reads,
// -writes or -deletes. The budget keeps, per subscription and ARM bucket:
//
//   - a pace bucket, an ordinary token bucket. Until ARM has reported the
//     bucket's level it is the configured conservative budget (RateLimit's
//     fields, else DefaultReadsPerSecond / DefaultReadBurst and
//     DefaultWritesPerSecond / DefaultWriteBurst): the budget behaves
//     exactly as a fixed one. Once ARM has reported it, the pace bucket
//     refills at the adaptive rate: ARM's documented refill (reads 25/s,
//     writes and deletes 10/s), less sharedMargin while other clients are
//     seen spending the bucket (share.go), or the configured RateLimit rate
//     when one is set and lower; it holds as many
//     tokens as ARM's bucket above the reserve (or RateLimit's burst when
//     one is set), and the first report tops it up by the difference. When
//     ARM's last report is below the reserve, the pace bucket falls back to
//     the conservative rate and burst (never above the adaptive rate).
//   - the headroom: a lower bound on the tokens ARM's bucket holds above
//     the reserve, taken from ARM's last report (see observe) and refilled
//     at the adaptive rate between reports, up to ARM's bucket less the
//     reserve. It applies once ARM has reported the level.
//
// A request is sent when both have a token, and takes one from each.
//
// The reserve is what the budget leaves in ARM's bucket for the bucket's
// other clients (ARM's buckets are per principal: other processes with
// tagsync's identity): aloneReserve (2%) of ARM's bucket, at least one
// token, or sharedReserve (10%) while ARM's reports show another client
// spending it (share.go), where ARM's bucket is the largest remaining count
// ARM has reported plus one (200 writes and 250 reads on Azure today: a
// reserve of 4 or 20 writes and 5 or 25 reads).
//
// Why this cannot cause a 429 while the provider is the subscription's only
// client: a report of R remaining means ARM's bucket held R tokens just
// after it charged that request. Since then ARM has charged at most the
// requests it had not yet charged: those in flight when that request was
// sent plus those sent after it (U), and it has refilled at least zero
// tokens (refilling never takes a level below itself, even at the cap). So
// ARM's bucket now holds at least R - U, and the headroom is set to
// R - reserve - U: ARM holds the headroom plus the reserve, or more.
// Between reports the headroom refills no faster than ARM's documented
// refill and stops at ARM's bucket less the reserve, so it stays a lower
// bound as long as ARM refills at least that fast; each request takes a
// token from both. A request is therefore sent only while ARM holds at
// least the reserve plus one token (the reserve is at least one token,
// which also covers an ARM that reports the level before charging). An
// older answer arriving after a newer one is not used.
//
// When another client spends the same quota, ARM's reports drop by what it
// spent; the budget's headroom drops with them at the next answer, the
// share turns to shared (the larger reserve, the margin) for a whole refill
// of the bucket, and its requests wait until ARM's refill covers them
// again. Once the reports are
// below the reserve (the other clients are spending it), the pace bucket
// also slows to the conservative rate until ARM reports more than the
// reserve again. Requests sent before a report arrives (at most the
// requests in flight) cannot see the other client's spending, so with
// several clients a 429 is possible but the reserve makes it unlikely; the
// throttle gates then hold the subscription as ARM asks.
//
// Requests outside any subscription, and Resource Graph queries (whose
// quota is per tenant and reported in other headers), use the conservative
// write budget only. HTTP DELETEs have their own budget, configured as the
// writes, as ARM charges them to a bucket of their own.
// armClass is one of ARM's per-subscription throttling buckets.
type armClass int

// The ARM buckets.
const (
	armReads armClass = iota
	armWrites
	armDeletes
)

// armClassOf returns the ARM bucket that charges a request of method.
func armClassOf(method string) armClass {
	switch method {
	case http.MethodGet, http.MethodHead:
		return armReads
	case http.MethodDelete:
		return armDeletes
	}
	return armWrites
}

// documentedRefill is ARM's documented refill per second of the bucket.
func (c armClass) documentedRefill() float64 {
	if c == armReads {
		return 25
	}
	return 10
}

// header is the response header in which ARM reports the bucket's
// remaining tokens for requests in a subscription.
func (c armClass) header() string {
	switch c {
	case armReads:
		return "x-ms-ratelimit-remaining-subscription-reads"
	case armDeletes:
		return "x-ms-ratelimit-remaining-subscription-deletes"
	}
	return "x-ms-ratelimit-remaining-subscription-writes"
}

// remaining reads ARM's report of c's remaining tokens from an answer.
func (c armClass) remaining(resp *http.Response) (int, bool) {
	if resp == nil {
		return 0, false
	}
	n, err := strconv.Atoi(resp.Header.Get(c.header()))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// classConfig is the resolved configuration of one ARM bucket's budget.
type classConfig struct {
	// fallbackRate and fallbackBurst are the conservative budget: the
	// configured RateLimit fields or the defaults.
	fallbackRate, fallbackBurst float64
	// burstCap is the configured burst (0: none), which also caps the
	// adaptive pace bucket.
	burstCap float64
	// documented is ARM's documented refill; rateCap the configured rate
	// (0: none), which caps the adaptive one.
	documented, rateCap float64
}

// adaptive is the adaptive rate of the share's rate of ARM's refill: that,
// or the configured rate when lower.
func (c classConfig) adaptive(rate float64) float64 {
	if c.rateCap > 0 {
		return math.Min(rate, c.rateCap)
	}
	return rate
}

// classConfigOf resolves r for ARM bucket c (deletes use the write fields).
func classConfigOf(r RateLimit, c armClass) classConfig {
	rate, burst := r.WritesPerSecond, r.WriteBurst
	defRate, defBurst := float64(DefaultWritesPerSecond), float64(DefaultWriteBurst)
	if c == armReads {
		rate, burst = r.ReadsPerSecond, r.ReadBurst
		defRate, defBurst = DefaultReadsPerSecond, DefaultReadBurst
	}
	cfg := classConfig{fallbackRate: defRate, fallbackBurst: defBurst, documented: c.documentedRefill()}
	if rate > 0 {
		cfg.fallbackRate, cfg.rateCap = rate, rate
	}
	if burst > 0 {
		cfg.fallbackBurst = float64(burst)
		cfg.burstCap = float64(burst)
	}
	return cfg
}

// budget is the client-side request budget of a Provider: per subscription
// and ARM bucket, a classBudget that follows ARM's reports of its remaining
// quota (see the comment on armClass's buckets above), waited on by throttlePolicy
// before every HTTP attempt (retries and LRO polls included).
type budget struct {
	cfg RateLimit
	now func() time.Time

	mu      sync.Mutex
	classes map[budgetKey]*classBudget
}

// budgetKey names one classBudget: a lower-cased subscription ("" outside
// any) and ARM bucket.
type budgetKey struct {
	sub   string
	class armClass
}

// newBudget builds the budget of r; nil when the budget is disabled.
func newBudget(r RateLimit) *budget {
	if r.Disabled {
		return nil
	}
	return &budget{cfg: r, now: time.Now, classes: map[budgetKey]*classBudget{}}
}

// class returns (creating once) the budget of a subscription and ARM bucket.
func (b *budget) class(sub string, c armClass) *classBudget {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := budgetKey{sub: sub, class: c}
	cb := b.classes[k]
	if cb == nil {
		cb = newClassBudget(c, classConfigOf(b.cfg, c), sub != "", b.now())
		b.classes[k] = cb
	}
	return cb
}

// ticket is one request the budget let through; observe hands it back
// with the answer.
type ticket struct {
	cb *classBudget
	// mark is the number of requests the classBudget had sent before
	// this one; inflight the number then in flight; at when it left.
	mark     uint64
	inflight int
	at       time.Time
}

// wait blocks until the budget of sub (lower-cased, "" outside any) and
// ARM bucket c lets a request through, and returns its ticket. It fails
// when ctx ends first, or at once when ctx's deadline comes before the
// budget would let the request through.
func (b *budget) wait(ctx context.Context, sub string, c armClass) (ticket, error) {
	cb := b.class(sub, c)
	waited := false
	for {
		cb.mu.Lock()
		now := b.now()
		d := cb.take(now)
		if d == 0 {
			t := cb.send(waited)
			cb.mu.Unlock()
			return t, nil
		}
		changed := cb.changed // closed when an answer changes the budget: look again
		cb.mu.Unlock()
		if err := cloud.WaitTurn(ctx, now, d, changed); err != nil {
			return ticket{}, err
		}
		waited = true
	}
}

// observe hands a ticket back with its answer (nil when none came).
func (b *budget) observe(t ticket, resp *http.Response) {
	if t.cb == nil {
		return
	}
	t.cb.mu.Lock()
	defer t.cb.mu.Unlock()
	r, ok := t.cb.class.remaining(resp)
	t.cb.observe(b.now(), t, r, ok)
}

// classBudget is the budget of one subscription's ARM bucket (see the
// comment on armClass's buckets above). Its methods but wait's loop run
// under mu.
type classBudget struct {
	cfg      classConfig
	class    armClass
	adaptive bool // ARM's reports are followed (requests in a subscription)

	mu sync.Mutex
	// changed is closed (and replaced) when an answer changes the budget,
	// to wake the waiters.
	changed chan struct{}
	last    time.Time // when the buckets were last refilled

	// pace is the pace bucket.
	pace cloud.TokenBucket

	// ARM's reports.
	known      bool    // ARM has reported the level
	headroom   float64 // a lower bound of ARM's tokens above the reserve
	armMax     int     // the largest remaining count ARM reported
	low        bool    // ARM's last report was below the reserve
	anchorMark uint64  // the mark of the request whose answer set the headroom

	// share is what it leaves to the bucket's other clients.
	share share

	sent     uint64 // requests let through
	inflight int    // requests let through and not answered
	waits    uint64 // requests that had to wait
}

// newClassBudget returns the budget of ARM bucket c, holding the
// conservative burst; adaptive when it follows ARM's reports.
func newClassBudget(c armClass, cfg classConfig, adaptive bool, now time.Time) *classBudget {
	return &classBudget{
		class: c, cfg: cfg, adaptive: adaptive, changed: make(chan struct{}), last: now,
		pace: cloud.NewTokenBucket(cfg.fallbackRate, cfg.fallbackBurst, now),
	}
}

// reserve is the number of tokens left in ARM's bucket for other clients.
func (cb *classBudget) reserve(now time.Time) float64 {
	return cb.share.reserve(float64(cb.armMax+1), now)
}

// adaptiveRate is the rate the budget follows ARM's refill at.
func (cb *classBudget) adaptiveRate(now time.Time) float64 {
	return cb.cfg.adaptive(cb.share.rate(cb.cfg.documented, now))
}

// fill is how long ARM takes to refill its whole bucket.
func (cb *classBudget) fill() time.Duration {
	return time.Duration(float64(cb.armMax+1) / cb.cfg.documented * float64(time.Second))
}

// refill brings both buckets to now.
func (cb *classBudget) refill(now time.Time) {
	dt := now.Sub(cb.last).Seconds()
	if dt <= 0 {
		return
	}
	cb.last = now
	cb.pace.Refill(now)
	if cb.known {
		cb.headroom = math.Min(float64(cb.armMax)-cb.reserve(now), cb.headroom+dt*cb.adaptiveRate(now))
	}
}

// take returns 0 when a request may be sent now (take a token from each
// bucket with send), else how long until it may at the earliest.
func (cb *classBudget) take(now time.Time) time.Duration {
	cb.refill(now)
	d := cb.pace.Delay()
	if cb.known && cb.headroom < 1 {
		d = max(d, cloud.DelayOf((1-cb.headroom)/cb.adaptiveRate(now)))
	}
	return d
}

// send takes a token from each bucket and returns the request's ticket.
func (cb *classBudget) send(waited bool) ticket {
	cb.pace.Take()
	if cb.known {
		cb.headroom--
	}
	if waited {
		cb.waits++
	}
	t := ticket{cb: cb, mark: cb.sent, inflight: cb.inflight, at: cb.last}
	cb.sent++
	cb.inflight++
	return t
}

// observe takes the answer of t's request: ARM reported remaining tokens
// left when ok. A report below the headroom plus the reserve, less the
// refill since the request left, is another client's spending (share.saw). The headroom
// becomes remaining - reserve - U, U being the requests ARM may not have
// charged yet when it answered (those in flight when t's request was sent
// and those sent since); the pace bucket takes the adaptive or, when
// remaining is below the reserve, the conservative rate. Answers older
// than the one that last set the headroom only count towards ARM's bucket
// size.
func (cb *classBudget) observe(now time.Time, t ticket, remaining int, ok bool) {
	cb.inflight--
	if !ok || !cb.adaptive {
		return
	}
	cb.refill(now)
	first := !cb.known
	cb.armMax = max(cb.armMax, remaining)
	if !first && t.mark < cb.anchorMark {
		return
	}
	uncharged := float64(cb.sent-t.mark-1) + float64(t.inflight)
	if !first {
		cb.share.saw(now, float64(remaining), cb.headroom+cb.reserve(now), 1+cb.adaptiveRate(now)*now.Sub(t.at).Seconds(), cb.fill())
	}
	cb.known, cb.anchorMark = true, t.mark
	res := cb.reserve(now)
	cb.headroom = math.Min(float64(cb.armMax)-res, float64(remaining)-res-uncharged)
	cb.low = float64(remaining) < res
	paceCap := math.Max(1, float64(cb.armMax)-res)
	cb.pace.Rate = cb.adaptiveRate(now)
	if cb.cfg.burstCap > 0 {
		paceCap = cb.cfg.burstCap
	}
	if cb.low {
		cb.pace.Rate = math.Min(cb.cfg.fallbackRate, cb.adaptiveRate(now))
		paceCap = cb.cfg.fallbackBurst
	}
	if first && paceCap > cb.pace.Cap {
		cb.pace.Tokens += paceCap - cb.pace.Cap // the conservative burst becomes ARM's
	}
	cb.pace.Cap = paceCap
	cb.pace.Tokens = math.Min(cb.pace.Tokens, cb.pace.Cap)
	close(cb.changed)
	cb.changed = make(chan struct{})
}

// stats reports, for tests, the requests let through and those that had to
// wait.
func (cb *classBudget) stats() (sent, waits uint64) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.sent, cb.waits
}
