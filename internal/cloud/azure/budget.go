package azure

import (
	"context"
	"sync"

	"golang.org/x/time/rate"
)

// budget is the client-side rate budget: token buckets for reads and
// writes per subscription (ARM's throttling buckets are per subscription),
// waited on by throttlePolicy before every HTTP attempt (retries and LRO
// polls included), so the provider stays well under ARM's limits however
// many reconciles run at once.
type budget struct {
	cfg RateLimit

	mu   sync.Mutex
	subs map[string]*subBudget // by lower-cased subscription
}

// subBudget is one subscription's buckets.
type subBudget struct {
	reads, writes *rate.Limiter
}

// newBudget builds the budget of r; nil when the budget is disabled.
func newBudget(r RateLimit) *budget {
	if r.Disabled {
		return nil
	}
	return &budget{cfg: r, subs: map[string]*subBudget{}}
}

// limiter returns (creating once) the bucket of a subscription (lower-cased;
// "" for requests outside any) and ARM bucket.
func (b *budget) limiter(sub string, bk bucket) *rate.Limiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.subs[sub]
	if s == nil {
		s = &subBudget{
			reads:  rate.NewLimiter(rate.Limit(b.cfg.ReadsPerSecond), b.cfg.ReadBurst),
			writes: rate.NewLimiter(rate.Limit(b.cfg.WritesPerSecond), b.cfg.WriteBurst),
		}
		b.subs[sub] = s
	}
	if bk == bucketReads {
		return s.reads
	}
	return s.writes
}

// wait blocks until the bucket has a token or ctx ends.
func (b *budget) wait(ctx context.Context, sub string, bk bucket) error {
	return b.limiter(sub, bk).Wait(ctx)
}
