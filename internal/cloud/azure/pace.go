package azure

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
)

// A resource provider's own limits are another bucket behind ARM's: Network
// allows a subscription 1000 writes (PUT, PATCH, DELETE; the Tags API's
// writes at its resources' scopes among them) and 10000 reads every 5
// minutes (Microsoft's "Request limits and throttling", "Network
// throttling"), whoever sends them. The pace keeps, per subscription,
// provider and kind (reads; writes and deletes together), a token bucket
// for each published limit, as the budget does for ARM's buckets: an
// estimate of the provider's bucket, refilled at the published rate and set
// from the provider's reports of its calls left
// (x-ms-ratelimit-remaining-resource, the lowest of the provider's
// policies) less the requests sent after the reported one, spent down to a
// reserve left to the subscription's other clients. What it leaves them is
// the share's (share.go): 2% of the bucket while no one else is seen
// spending it, 10% and 5% of the refill for a whole refill after another
// client was. So a batch of tag writes to 2000 network resources waits for
// Network's refill instead of running into its 429s, and takes the time
// Network's limit allows when tagsync is its only client.

// providerLimit is a provider's published bucket: its size and refill per
// second.
type providerLimit struct{ capacity, refill float64 }

// providerLimits are the published limits the pace follows, by lower-cased
// provider namespace: reads, then writes.
var providerLimits = map[string][2]providerLimit{
	"microsoft.network": {{capacity: 10000, refill: 10000.0 / 300}, {capacity: 1000, refill: 1000.0 / 300}},
}

// pace holds the provider buckets.
type pace struct {
	limits  map[string][2]providerLimit
	now     func() time.Time
	mu      sync.Mutex
	buckets map[paceKey]*paceBucket
}

// paceKey names one provider bucket: a lower-cased subscription and
// provider, and reads or writes.
type paceKey struct {
	sub, provider string
	write         bool
}

// paceBucket is one provider bucket's state; its fields are under pace.mu.
type paceBucket struct {
	limit    providerLimit
	tokens   float64   // the estimate of the provider's bucket
	at       time.Time // of the last refill
	sent     uint64    // requests let through
	inflight int       // of them, those not answered yet
	seen     uint64    // mark of the newest report used
	share    share     // what it leaves to other clients
}

// paceTicket is one request the pace let through: its mark (how many
// requests the bucket let through before and with it), how many were in
// flight when it left (they may reach the provider after it), and when.
type paceTicket struct {
	b        *paceBucket
	mark     uint64
	inflight int
	at       time.Time
}

// newPace returns the pace of limits (nil: the published ones).
func newPace(limits map[string][2]providerLimit) *pace {
	if limits == nil {
		limits = providerLimits
	}
	return &pace{limits: limits, now: time.Now, buckets: map[paceKey]*paceBucket{}}
}

// bucketOf returns the bucket a request of the provider gate k spends, nil
// when its provider publishes no limit (or the pace is off).
func (p *pace) bucketOf(k gateKey) *paceBucket {
	if p == nil || k.provider == "" || k.sub == "" {
		return nil
	}
	lim, ok := p.limits[k.provider]
	if !ok {
		return nil
	}
	key := paceKey{sub: k.sub, provider: k.provider, write: k.bucket != bucketReads}
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.buckets[key]
	if b == nil {
		l := lim[0]
		if key.write {
			l = lim[1]
		}
		b = &paceBucket{limit: l, tokens: l.capacity, at: p.now()}
		p.buckets[key] = b
	}
	return b
}

// fill is how long the provider takes to refill its whole bucket.
func (l providerLimit) fill() time.Duration {
	return time.Duration(l.capacity / l.refill * float64(time.Second))
}

// rate is the refill the bucket spends.
func (b *paceBucket) rate(now time.Time) float64 { return b.share.rate(b.limit.refill, now) }

// above is the estimate's tokens above the reserve.
func (b *paceBucket) above(now time.Time) float64 {
	return b.tokens - b.share.reserve(b.limit.capacity, now)
}

// wait takes a token of b, waiting while there is none, and returns the
// request's ticket.
func (p *pace) wait(ctx context.Context, b *paceBucket) (paceTicket, error) {
	for {
		p.mu.Lock()
		now := p.now()
		b.refill(now)
		level := b.above(now)
		if level >= 1 {
			b.tokens--
			b.sent++
			t := paceTicket{b: b, mark: b.sent, inflight: b.inflight, at: now}
			b.inflight++
			p.mu.Unlock()
			return t, nil
		}
		d := time.Duration((1 - level) / b.rate(now) * float64(time.Second))
		p.mu.Unlock()
		if err := cloud.WaitTurn(ctx, now, d, nil); err != nil {
			return paceTicket{}, err
		}
	}
}

// refill adds what the rate gave since the last refill, up to the
// provider's bucket; the caller holds pace.mu.
func (b *paceBucket) refill(now time.Time) {
	if el := now.Sub(b.at).Seconds(); el > 0 {
		b.tokens = min(b.tokens+el*b.rate(now), b.limit.capacity)
	}
	b.at = now
}

// observe hands a ticket back with its answer (nil: none came). The
// provider reported the calls it had left after charging the request; it
// may have charged since the requests in flight when it left and those
// let through after it. A report below the estimate less the refill since
// the request left is another client's spending (share.saw). An older
// answer than one used already is not used.
func (p *pace) observe(t paceTicket, provider string, resp *http.Response) {
	left, ok := providerRemaining(resp, provider)
	p.mu.Lock()
	defer p.mu.Unlock()
	b := t.b
	b.inflight--
	if !ok || t.mark <= b.seen {
		return
	}
	b.seen = t.mark
	now := p.now()
	b.refill(now)
	charged := float64(b.sent-t.mark) + float64(t.inflight)
	b.share.saw(now, float64(left), b.tokens, 1+b.rate(now)*now.Sub(t.at).Seconds(), b.limit.fill())
	b.tokens = min(float64(left)-charged, b.limit.capacity)
}

// providerRemaining is the lowest count an answer reports for provider's
// policies in x-ms-ratelimit-remaining-resource ("<provider>/<policy>;<n>").
func providerRemaining(resp *http.Response, provider string) (int, bool) {
	if resp == nil {
		return 0, false
	}
	low, found := 0, false
	for _, v := range resp.Header.Values("X-Ms-Ratelimit-Remaining-Resource") {
		for _, part := range strings.Split(v, ",") {
			name, count, ok := strings.Cut(strings.TrimSpace(part), ";")
			n, err := strconv.Atoi(strings.TrimSpace(count))
			if !ok || err != nil || !strings.HasPrefix(strings.ToLower(name), provider+"/") {
				continue
			}
			if !found || n < low {
				low, found = n, true
			}
		}
	}
	return low, found
}
