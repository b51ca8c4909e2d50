package azure

import (
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"golang.org/x/time/rate"
)

// budget is the client-side rate budget: a per-retry pipeline policy that
// waits for a token before every HTTP attempt (retries and LRO polls
// included), so the provider stays well under ARM's per-subscription
// throttling buckets however many reconciles run at once.
type budget struct {
	reads, writes *rate.Limiter
}

// newBudget builds the buckets of r; nil when the budget is disabled.
func newBudget(r RateLimit) *budget {
	if r.Disabled {
		return nil
	}
	return &budget{
		reads:  rate.NewLimiter(rate.Limit(r.ReadsPerSecond), r.ReadBurst),
		writes: rate.NewLimiter(rate.Limit(r.WritesPerSecond), r.WriteBurst),
	}
}

// limiter picks the bucket of a request: GET and HEAD are reads, as ARM
// counts them; everything else is a write.
func (b *budget) limiter(method string) *rate.Limiter {
	if method == http.MethodGet || method == http.MethodHead {
		return b.reads
	}
	return b.writes
}

// Do implements policy.Policy.
func (b *budget) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	if err := b.limiter(raw.Method).Wait(raw.Context()); err != nil {
		return nil, fmt.Errorf("azure: waiting for the client-side request budget: %w", err)
	}
	return req.Next()
}
