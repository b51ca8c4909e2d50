package aws

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// advance moves the gates' clock forward by d.
func (g *ThrottleGates) advance(d time.Duration) { g.gates.Advance(d) }

// throttleFirst answers the first n requests of op in region with EC2's
// RequestLimitExceeded, then lets requests through; it counts the
// throttled ones.
func throttleFirst(n int32, op, region string, count *atomic.Int32) func(*http.Request, string, string) *http.Response {
	return func(_ *http.Request, o, r string) *http.Response {
		if o == op && r == region && count.Add(1) <= n {
			return ec2Error(http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded.")
		}
		return nil
	}
}

// TestThrottleGate: a throttled CreateTags fails its resources with
// ErrThrottled and a RetryAfter, and closes the gate of writes in its
// region: the next write there fails at once without a request, while
// reads of the region and writes of other regions go on; once the wait has
// passed, writes go again.
func TestThrottleGate(t *testing.T) {
	t.Parallel()
	// A held write fails at once, and is not sent again: the gate is what
	// this test looks at, not the provider's patience.
	e := newEnv(t, WithRetryMaxAttempts(1), func(o *Options) { o.throttlePatience = time.Nanosecond })
	e.gates.hold = 0
	east := e.instances("us-east-1", 3, nil)
	west := e.instances("eu-west-1", 1, nil)
	var throttled atomic.Int32
	e.tr.setInject(throttleFirst(1, "CreateTags", "us-east-1", &throttled))
	write := tags.Patch{Set: tags.Set{"team": "a"}}

	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: east, Patch: write}}, nil)
	for _, r := range res {
		wait, ok := cloud.RetryAfter(r.Err)
		if !errors.Is(r.Err, cloud.ErrThrottled) || !ok || wait <= 0 || wait > DefaultThrottleWait {
			t.Fatalf("%s: %v (retry after %s), want throttled for up to %s", r.ID, r.Err, wait, DefaultThrottleWait)
		}
	}
	t.Logf("throttled: %v", res[0].Err)
	if notSent(res[0].Err) {
		t.Errorf("the write AWS throttled says it was not sent: %v", res[0].Err)
	}
	if got := e.p.Calls()["ec2:CreateTags"]; got != 1 {
		t.Fatalf("CreateTags calls = %d, want 1 (the batch is not isolated on throttling)", got)
	}

	res = e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: east[:1], Patch: write}}, nil)
	if !errors.Is(res[0].Err, cloud.ErrThrottled) {
		t.Fatalf("write behind a closed gate: %v, want throttled", res[0].Err)
	}
	t.Logf("held: %v", res[0].Err)
	if !notSent(res[0].Err) {
		t.Errorf("the held write does not say it was not sent: %v", res[0].Err)
	}
	if got := e.p.Calls()["ec2:CreateTags"]; got != 1 || throttled.Load() != 1 {
		t.Fatalf("CreateTags calls = %d, throttled answers %d; want the held write unsent", got, throttled.Load())
	}
	if got := e.counterValue(cloud.MetricHeld, map[string]string{"provider": "aws", "operation": "ec2:CreateTags", "bucket": "writes"}); got != 1 {
		t.Fatalf("held metric = %v, want 1", got)
	}
	if got := e.counterValue(cloud.MetricThrottled, map[string]string{"provider": "aws", "operation": "ec2:CreateTags"}); got != 1 {
		t.Fatalf("throttled metric = %v, want 1", got)
	}
	if got := e.counterValue(cloud.MetricRequests, map[string]string{"provider": "aws", "operation": "ec2:CreateTags", "code": "503"}); got != 1 {
		t.Fatalf("requests{code=503} = %v, want 1", got)
	}

	// Reads of the region (another bucket) and writes of another region.
	if d, err := e.p.Discover(e.ctx, []cloud.Classifier{{Name: "team", Value: "a"}}, cloud.DiscoverOptions{Scopes: []string{"us-east-1"}}); err != nil || len(d.Failed) != 0 {
		t.Fatalf("read behind a closed write gate: %+v, %v", d.Failed, err)
	}
	if res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: west, Patch: write}}, nil); res[0].Err != nil {
		t.Fatalf("write in another region: %v", res[0].Err)
	}

	e.gates.advance(DefaultThrottleWait)
	res = e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: east, Patch: write}}, nil)
	checkResults(t, res, east, nil)
}

// noBackoff retries at once.
type noBackoff struct{}

// BackoffDelay returns 0.
func (noBackoff) BackoffDelay(int, error) (time.Duration, error) { return 0, nil }

// TestThrottleGateRetries: the SDK's retries of the throttled call itself
// pass its gate and count as requests; other calls stay held.
func TestThrottleGateRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, WithLoadOptions(config.WithRetryer(func() sdkaws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3; o.Backoff = noBackoff{} })
	})), func(o *Options) { o.throttlePatience = time.Nanosecond })
	e.gates.hold = 0 // a held call fails at once, and is not sent again: what this test looks at
	ids := e.instances("us-east-1", 2, nil)
	var throttled atomic.Int32
	e.tr.setInject(throttleFirst(1, "CreateTags", "us-east-1", &throttled))
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"team": "a"}}}}, nil)
	checkResults(t, res, ids, nil)
	if got := e.p.Calls()["ec2:CreateTags"]; got != 2 {
		t.Fatalf("CreateTags requests = %d, want 2 (the throttled one and its retry)", got)
	}
	res = e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"team": "b"}}}}, nil)
	if !errors.Is(res[0].Err, cloud.ErrThrottled) {
		t.Fatalf("another call within the wait: %v, want held", res[0].Err)
	}
	if got := e.p.Calls()["ec2:CreateTags"]; got != 2 {
		t.Fatalf("CreateTags requests = %d after a held call, want 2", got)
	}
}

// TestGateWaits: the wait doubles while throttled answers to requests sent
// after the gate last closed follow each other, up to MaxThrottleWait, and
// starts over after another answer; the answers to requests already in
// flight when it closed (concurrent calls throttled at once) do not
// lengthen it.
func TestGateWaits(t *testing.T) {
	t.Parallel()
	g := NewThrottleGates()
	start := time.Now()
	g.gates.SetClock(func() time.Time { return start })
	k := gateKey{service: "EC2", region: "us-east-1", bucket: bucketWrites}
	other := k
	other.bucket = bucketReads
	if got := g.throttled(k, start.Add(-time.Second)); got != DefaultThrottleWait {
		t.Fatalf("first throttle: wait %s", got)
	}
	for range 3 {
		if got := g.throttled(k, start.Add(-time.Second)); got != DefaultThrottleWait {
			t.Fatalf("a request in flight when the gate closed, throttled too: wait %s, want still %s", got, DefaultThrottleWait)
		}
	}
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, MaxThrottleWait, MaxThrottleWait} {
		if got := g.throttled(k, start.Add(time.Duration(i+1)*time.Millisecond)); got != want {
			t.Fatalf("throttle %d after the first: wait %s, want %s", i+1, got, want)
		}
	}
	if g.remaining(other) != 0 {
		t.Fatal("the reads gate closed with the writes gate")
	}
	g.answered(k)
	if got := g.remaining(k); got != MaxThrottleWait {
		t.Fatalf("after an answer the gate is open for %s, want still closed for %s", got, MaxThrottleWait)
	}
	g.gates.SetClock(func() time.Time { return start.Add(MaxThrottleWait) })
	if got := g.remaining(k); got != 0 {
		t.Fatalf("after the wait: %s left", got)
	}
	if got := g.throttled(k, start.Add(MaxThrottleWait)); got != DefaultThrottleWait {
		t.Fatalf("after the streak ended: wait %s, want %s", got, DefaultThrottleWait)
	}
}

// TestBucketOf: reads and writes.
func TestBucketOf(t *testing.T) {
	t.Parallel()
	for op, want := range map[string]bucket{"DescribeTags": bucketReads, "GetResources": bucketReads, "ListTagsForResource": bucketReads,
		"CreateTags": bucketWrites, "DeleteTags": bucketWrites} {
		if got := bucketOf(op); got != want {
			t.Errorf("bucketOf(%s) = %s, want %s", op, got, want)
		}
	}
}

// notSent reports whether err says its request was never sent.
func notSent(err error) bool {
	var t *cloud.ThrottledError
	return errors.As(err, &t) && t.NotSent()
}
