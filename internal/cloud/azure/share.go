package azure

import (
	"math"
	"time"
)

// What the budgets leave to the other clients of a quota. ARM's buckets are
// per subscription and principal, so their other clients are those that use
// tagsync's identity; a provider's own limits (Network's) are per
// subscription, shared with every client in it. A budget cannot know they
// exist until they spend, and then the quota's reports show it: a report
// below what the budget's own requests can explain. So a share has two
// states:
//
//   - alone (the start, and after a whole refill of the bucket with no one
//     else seen spending): the budget spends the documented refill and
//     leaves aloneReserve of the bucket (at least one token), so a batch
//     written when tagsync is the quota's only client takes the time the
//     quota allows;
//   - shared (for a whole refill of the bucket after another client was
//     last seen spending): it spends the refill less sharedMargin and
//     leaves sharedReserve of the bucket, so the others' requests find
//     tokens while tagsync writes.
//
// When another client starts while the budget spends alone, the first
// report after its requests turns the share to shared: at most the other
// client's requests before that report meet a bucket held down to the
// small reserve, and the budget then waits until the bucket is back above
// the larger one.
const (
	// sharedReserve is the share of a bucket left to other clients that
	// spend it.
	sharedReserve = 0.10
	// sharedMargin is the share of the documented refill left unused while
	// other clients spend the bucket.
	sharedMargin = 0.05
	// aloneReserve is the share of a bucket left while no other client is
	// seen spending it.
	aloneReserve = 0.02
)

// share is what a budget of one bucket leaves to the bucket's other
// clients (see sharedReserve).
type share struct {
	// until is when the other clients last seen spending count as gone: a
	// whole refill of the bucket after that report.
	until time.Time
	// turns counts the reports that showed another client spending.
	turns int
}

// others reports whether other clients count as spending the bucket.
func (s *share) others(now time.Time) bool { return now.Before(s.until) }

// reserve is the tokens left in a bucket of capacity to other clients.
func (s *share) reserve(capacity float64, now time.Time) float64 {
	r := aloneReserve
	if s.others(now) {
		r = sharedReserve
	}
	return math.Max(1, math.Ceil(r*capacity))
}

// rate is the refill a budget spends of the documented one.
func (s *share) rate(documented float64, now time.Time) float64 {
	if s.others(now) {
		return documented * (1 - sharedMargin)
	}
	return documented
}

// saw takes a report: reported is the count the provider reported after
// charging a request, expected the budget's estimate of the bucket now (a
// lower bound of it while the budget is the bucket's only client: it counts
// every request the budget sent as charged, and refills no faster than the
// provider), and slack the refill since the request left, plus one. With
// no one else spending, the bucket now holds at most the report plus the
// refill since (the provider charged the report's request and maybe more of
// the budget's), so it cannot report below expected - slack; a report below
// that is another client's spending, and the share counts others for fill
// (a whole refill of the bucket) from now.
func (s *share) saw(now time.Time, reported, expected, slack float64, fill time.Duration) {
	if reported < expected-slack {
		s.until = now.Add(fill)
		s.turns++
	}
}
