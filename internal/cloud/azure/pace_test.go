package azure

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// TestNetworkLimitIsPaced: Network's write budget of the subscription (here
// 10, refilled 5 a second) is smaller than a batch of 30 network resources:
// the pace follows it and Network's reports, so every resource is written
// and none is refused with 429. Without the pace (the client-side budget
// off) the same batch runs into Network's 429s.
func TestNetworkLimitIsPaced(t *testing.T) {
	limits := map[string][2]providerLimit{"microsoft.network": {{capacity: 100, refill: 50}, {capacity: 10, refill: 5}}}
	for _, paced := range []bool{true, false} {
		t.Run(fmt.Sprintf("paced=%t", paced), func(t *testing.T) {
			env := startArmsim(t, armsimtest.WithThrottle(armsim.ThrottleOptions{NetworkWrites: armsim.Bucket{Capacity: 10, RefillPerSecond: 5}}))
			ids := make([]string, 30)
			for i := range ids {
				ids[i] = env.resource("rg", armsim.Resource{Type: armsim.TypeNetworkInterface, Name: fmt.Sprintf("nic-%d", i)})
			}
			opts := []Option{WithThrottleGates(NewThrottleGates()), func(o *Options) { o.providerLimits = limits }}
			if !paced {
				opts = append(opts, WithRateLimit(RateLimit{Disabled: true}))
			}
			p := env.provider(opts...)
			res := p.WriteTags(t.Context(), []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"team": "a"}}}}, nil)
			refused := env.Server.Calls().CountStatus("Tags.UpdateAtScope", http.StatusTooManyRequests)
			failed := 0
			for _, r := range res {
				if r.Err != nil {
					failed++
				}
			}
			switch {
			case paced && (refused != 0 || failed != 0):
				t.Errorf("paced: %d answers 429, %d resources failed; want none", refused, failed)
			case !paced && refused == 0:
				t.Error("unpaced: no 429: the test shows nothing")
			}
		})
	}
}

// paceClock is the fake time of the pace tests.
type paceClock struct{ now time.Time }

// paceSend lets one request through b at the clock's time if the pace has a
// token, with the provider answering at once with the count left.
func paceSend(p *pace, b *paceBucket, nb *armBucket) bool {
	now := p.now()
	p.mu.Lock()
	b.refill(now)
	ok := b.above(now) >= 1
	p.mu.Unlock()
	if !ok {
		return false
	}
	t, err := p.wait(context.Background(), b)
	if err != nil {
		return false
	}
	h := http.Header{}
	h.Set("x-ms-ratelimit-remaining-resource", fmt.Sprintf("Microsoft.Network/PutTags;%d", nb.charge(now)))
	p.observe(t, "microsoft.network", &http.Response{Header: h})
	return true
}

// paceFor keeps a one-at-a-time client busy for d from the clock's time,
// in steps of 10 ms, and returns the requests sent; the clock is at the
// end.
func paceFor(p *pace, c *paceClock, b *paceBucket, nb *armBucket, d time.Duration) int {
	n := 0
	for end := c.now.Add(d); c.now.Before(end); c.now = c.now.Add(10 * time.Millisecond) {
		for paceSend(p, b, nb) {
			n++
		}
	}
	return n
}

// TestPaceLeavesOthersTheirShare: alone with Network's write budget (1000,
// refilled 1000 per 5 minutes) the pace spends it down to the small
// reserve of 20 and then at Network's refill, with no 429; when another
// client spends the bucket, the next report shows it: the pace leaves the
// larger reserve of 100 and 5% of the refill, and the other client's
// requests find tokens; 5 minutes (a whole refill) after it was last seen,
// the pace spends as when alone again.
func TestPaceLeavesOthersTheirShare(t *testing.T) {
	p := newPace(nil)
	c := &paceClock{now: t0}
	p.now = func() time.Time { return c.now }
	b := p.bucketOf(gateKey{sub: "s", provider: "microsoft.network", bucket: bucketWrites})
	network := newARMBucket(1000, 1000.0/300, t0)
	if n := paceFor(p, c, b, network, time.Second); n < 980 || n > 984 {
		t.Errorf("%d writes in the first second, want Network's 1000 less the reserve of 20", n)
	}
	n := paceFor(p, c, b, network, 60*time.Second)
	if n < 195 || n > 201 || network.throttled != 0 || network.minLeft < 19 || b.share.turns != 0 {
		t.Errorf("alone for a minute: %d writes (want 200 at Network's refill), %d × 429, Network down to %v, %d reports taken for another client",
			n, network.throttled, network.minLeft, b.share.turns)
	}
	// Another client takes 50 tokens over 10 s while the pace writes.
	for i := range 1000 {
		if i%20 == 0 {
			network.charge(c.now)
		}
		for paceSend(p, b, network) {
		}
		c.now = c.now.Add(10 * time.Millisecond)
	}
	if b.share.turns == 0 || !b.share.others(c.now) || b.share.reserve(1000, c.now) != 100 || b.rate(c.now) != 1000.0/300*0.95 {
		t.Fatalf("beside another client: %d reports taken for it, others %v, reserve %v, rate %v; want the shared reserve of 100 and 95%% of the refill",
			b.share.turns, b.share.others(c.now), b.share.reserve(1000, c.now), b.rate(c.now))
	}
	// The pace waits until the bucket is back above the larger reserve:
	// the other client's next 50 find tokens.
	paceFor(p, c, b, network, 30*time.Second)
	before := network.throttled
	for range 50 {
		network.charge(c.now)
	}
	if network.throttled != before {
		t.Errorf("%d of the other client's 50 requests refused", network.throttled-before)
	}
	// Alone again for 5 minutes: the small reserve and the whole refill.
	paceFor(p, c, b, network, 301*time.Second)
	if b.share.others(c.now) || b.share.reserve(1000, c.now) != 20 || b.rate(c.now) != 1000.0/300 {
		t.Errorf("5 minutes alone again: others %v, reserve %v, rate %v", b.share.others(c.now), b.share.reserve(1000, c.now), b.rate(c.now))
	}
	if network.throttled != 0 {
		t.Errorf("%d × 429 in all", network.throttled)
	}
}
