package aws

import (
	"context"

	"github.com/aws/smithy-go/middleware"

	"github.com/tagsync/tagsync/internal/cloud"
)

// budget is the provider's client-side request budget: a token bucket per
// region and bucket (reads, writes): a cloud.RateLimiter of
// cloud.TokenBuckets, the bucket the Azure provider's budget also paces
// with. A Provider speaks for one account, so its budget is per account
// and region.
type budget struct {
	reads, writes *cloud.RateLimiter
}

// newBudget returns the budget of r; nil when it is disabled.
func newBudget(r RateLimit) *budget {
	if r.Disabled {
		return nil
	}
	return &budget{
		reads:  cloud.NewRateLimiter(r.ReadsPerSecond, r.ReadBurst, nil),
		writes: cloud.NewRateLimiter(r.WritesPerSecond, r.WriteBurst, nil),
	}
}

// wait blocks until the budget of region lets a request of operation op
// through.
func (b *budget) wait(ctx context.Context, region, op string) error {
	l := b.reads
	if bucketOf(op) == bucketWrites {
		l = b.writes
	}
	return l.Wait(ctx, region)
}

// budgetMiddleware waits on the budget before every attempt of a call.
type budgetMiddleware struct {
	b      *budget
	region string
}

// ID names the middleware in the stack.
func (budgetMiddleware) ID() string { return "TagsyncBudget" }

// HandleFinalize waits for the budget, then sends.
func (mw budgetMiddleware) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
	middleware.FinalizeOutput, middleware.Metadata, error,
) {
	if mw.b != nil {
		if err := mw.b.wait(ctx, mw.region, middleware.GetOperationName(ctx)); err != nil {
			return middleware.FinalizeOutput{}, middleware.Metadata{}, err
		}
	}
	return next.HandleFinalize(ctx, in)
}
