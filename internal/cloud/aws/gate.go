package aws

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go/middleware"

	"github.com/tagsync/tagsync/internal/cloud"
)

// bucket is one of AWS's throttling buckets of an account and region, as
// tagsync sees them: reads (Describe*, Get*, List*) or writes (the rest).
type bucket string

// The buckets.
const (
	bucketReads  bucket = "reads"
	bucketWrites bucket = "writes"
)

// bucketOf returns the bucket of an SDK operation name.
func bucketOf(op string) bucket {
	for _, p := range []string{"Describe", "Get", "List"} {
		if strings.HasPrefix(op, p) {
			return bucketReads
		}
	}
	return bucketWrites
}

// Throttle waits: after a throttled answer a gate closes for
// DefaultThrottleWait, doubled for every further throttled answer through
// it without a successful one in between, up to MaxThrottleWait; answers to
// requests already in flight when the gate last closed do not count
// (concurrent calls throttled at once are one throttling). AWS sends no
// Retry-After, so the waits are tagsync's.
const (
	DefaultThrottleWait = 5 * time.Second
	MaxThrottleWait     = 2 * time.Minute
)

// MaxThrottleHold is how long an attempt waits at a closed gate for it to
// open: a gate that opens sooner (and before the attempt's context ends)
// slows the call down instead of failing it, so one throttled call does
// not fail the calls of a pass that follow it. A gate closed for longer
// fails the attempt at once with a *cloud.ThrottledError (its RetryAfter
// the wait left), and the caller retries later. It covers the first two
// waits of a throttling streak (5 s, 10 s).
const MaxThrottleHold = 10 * time.Second

// gateKey names one gate: endpoint override ("" for AWS's own), service,
// region and bucket. AWS meters requests per account and region and, within
// EC2, per group of actions; one provider is one account.
type gateKey struct {
	endpoint, service, region string
	bucket                    bucket
}

// scope names the gate in words, e.g. "EC2 writes in us-east-1".
func (k gateKey) scope() string {
	return fmt.Sprintf("%s %s in %s", k.service, k.bucket, k.region)
}

// ThrottleGates remember AWS's requests to slow down: when AWS answers a
// request with a throttling error (EC2's RequestLimitExceeded, the Tagging
// API's ThrottlingException, any Throttling* code), the gate of that
// request's (service, region, bucket) closes for a while (DefaultThrottleWait,
// doubling while the throttling goes on, up to MaxThrottleWait), and every
// later HTTP attempt through that gate waits for it to open when that is
// at most MaxThrottleHold away, and otherwise fails at once with a
// *cloud.ThrottledError instead of being sent. Only the SDK's own retries of
// the call that was throttled pass, after the SDK's back-off: the call that
// met the throttling finishes as the SDK would, every other call stops. AWS
// meters per account and region, so the gates are shared by every Provider
// of the process (DefaultThrottleGates) unless WithThrottleGates gives a
// Provider its own: do that for Providers of different accounts, and in
// tests. ThrottleGates are safe for concurrent use.
type ThrottleGates struct {
	gates     *cloud.Gates[gateKey]
	base, max time.Duration
	hold      time.Duration // MaxThrottleHold
}

// NewThrottleGates returns gates that are all open.
func NewThrottleGates() *ThrottleGates {
	return &ThrottleGates{gates: cloud.NewGates[gateKey](), base: DefaultThrottleWait, max: MaxThrottleWait, hold: MaxThrottleHold}
}

// wait waits for k's gate to open when it closes for no longer than the
// gates' hold and the context's deadline allows, and reports whether it
// is open; left is how long it was to stay closed.
func (g *ThrottleGates) wait(ctx context.Context, k gateKey, left time.Duration) bool {
	for left > 0 {
		if left > g.hold {
			return false
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < left {
			return false
		}
		t := time.NewTimer(left)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		left = g.remaining(k)
	}
	return true
}

// defaultGates are the process-wide gates.
var defaultGates = NewThrottleGates()

// DefaultThrottleGates returns the process-wide gates that every Provider
// uses unless WithThrottleGates gives it others.
func DefaultThrottleGates() *ThrottleGates { return defaultGates }

// remaining returns how long k's gate stays closed; 0 when open.
func (g *ThrottleGates) remaining(k gateKey) time.Duration { return g.gates.Remaining(k) }

// throttled closes k's gate after a throttled answer to a request sent at
// sent and returns how long it stays closed.
func (g *ThrottleGates) throttled(k gateKey, sent time.Time) time.Duration {
	return g.gates.Throttled(k, sent, g.base, g.max)
}

// answered records an answer through k's gate that was not a throttling
// error: the streak ends (the gate stays closed until its time).
func (g *ThrottleGates) answered(k gateKey) { g.gates.Answered(k) }

// heldError is an HTTP attempt the gate did not send. It unwraps to the
// *cloud.ThrottledError, and tells the SDK's retryer not to retry it.
type heldError struct{ t *cloud.ThrottledError }

// Error says what is throttled, for how long, and that nothing was sent.
func (e *heldError) Error() string {
	return e.t.Error() + " (request not sent: AWS's last answer asked to slow down)"
}

// Unwrap returns the *cloud.ThrottledError.
func (e *heldError) Unwrap() error { return e.t }

// RetryableError tells the SDK's retryer that the attempt must not be
// retried.
func (*heldError) RetryableError() bool { return false }

// callState is shared by the attempts of one SDK call: the gates its own
// throttled answers closed, which its retries may pass.
type callState struct {
	mu     sync.Mutex
	closed map[gateKey]bool
}

// owns reports whether this call closed k.
func (s *callState) owns(k gateKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed[k]
}

// own records that this call closed k.
func (s *callState) own(k gateKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed == nil {
		s.closed = map[gateKey]bool{}
	}
	s.closed[k] = true
}

// callStateKey is the context key of a call's *callState.
type callStateKey struct{}

// callStateMiddleware is an Initialize-step middleware that gives each SDK
// call (all its attempts) a callState.
type callStateMiddleware struct{}

// ID names the middleware in the stack.
func (callStateMiddleware) ID() string { return "TagsyncCallState" }

// HandleInitialize attaches a fresh callState.
func (callStateMiddleware) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
	middleware.InitializeOutput, middleware.Metadata, error,
) {
	return next.HandleInitialize(context.WithValue(ctx, callStateKey{}, &callState{}), in)
}

// gateMiddleware is a Finalize-step middleware right after the SDK's retry
// middleware, so it runs once per attempt, before credentials are fetched
// and the request is signed: it holds attempts whose gate is closed and
// closes the gate when AWS answers with a throttling error.
type gateMiddleware struct {
	gates             *ThrottleGates
	m                 *cloud.RequestMetrics
	endpoint, service string
	region            string
}

// ID names the middleware in the stack.
func (gateMiddleware) ID() string { return "TagsyncThrottleGate" }

// key returns the gate of an operation.
func (mw gateMiddleware) key(op string) gateKey {
	return gateKey{endpoint: mw.endpoint, service: mw.service, region: mw.region, bucket: bucketOf(op)}
}

// HandleFinalize holds, sends, and closes the gate on a throttled answer.
func (mw gateMiddleware) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
	middleware.FinalizeOutput, middleware.Metadata, error,
) {
	key := mw.key(middleware.GetOperationName(ctx))
	st, _ := ctx.Value(callStateKey{}).(*callState)
	if left := mw.gates.remaining(key); left > 0 && (st == nil || !st.owns(key)) && !mw.gates.wait(ctx, key, left) {
		mw.m.Held(operationName(ctx), string(key.bucket))
		return middleware.FinalizeOutput{}, middleware.Metadata{}, &heldError{t: &cloud.ThrottledError{Scope: key.scope(), RetryAfter: cmp.Or(mw.gates.remaining(key), left)}}
	}
	sent := mw.gates.gates.Now()
	out, md, err := next.HandleFinalize(ctx, in)
	switch {
	case isThrottle(err):
		mw.gates.throttled(key, sent)
		if st != nil {
			st.own(key)
		}
	case answered(err):
		mw.gates.answered(key)
	}
	return out, md, err
}
