package aws

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// ThrottlePatience is how long, in all, one of the provider's reads or
// writes waits out AWS's throttling before it fails: the node sync's
// (Snapshot's DescribeInstances and DescribeAutoScalingGroups, a patch's
// reads and its EC2 and Auto Scaling tag writes) and the metadata engine's
// (Discover's GetResources pages, WriteTags' CreateTags and DeleteTags). A
// call that still ends in throttling once the SDK's retries and the
// throttle gate's hold (MaxThrottleHold) are spent is sent again when the
// gate opens, as long as the waits add up to no more than this and the
// context lasts. So throttling makes a pass slower, and fails it only when
// AWS keeps refusing for minutes. It is MaxThrottleWait: the longest a gate
// stays closed.
const ThrottlePatience = MaxThrottleWait

// throttledFor reports whether err is AWS's throttling (as the provider
// wraps it: a *cloud.ThrottledError) and how long to wait before calling
// again.
func throttledFor(err error) (time.Duration, bool) {
	var te *cloud.ThrottledError
	if !errors.As(err, &te) {
		return 0, false
	}
	return max(te.RetryAfter, time.Second), true
}

// patience is ThrottlePatience, or what a test set.
func (p *Provider) patience() time.Duration {
	if p.opts.throttlePatience != 0 {
		return p.opts.throttlePatience
	}
	return ThrottlePatience
}

// patiently runs call, and again while it fails with throttling (see
// ThrottlePatience), and returns its last error.
func (p *Provider) patiently(ctx context.Context, call func() error) error {
	start := time.Now()
	for {
		err := call()
		wait, throttled := throttledFor(err)
		if !throttled || time.Since(start)+wait > p.patience() || !cloud.Sleep(ctx, wait) {
			return err
		}
	}
}

// patientRead is patiently for a read that returns its findings.
func patientRead[T any](ctx context.Context, p *Provider, read func() (T, error)) (T, error) {
	var out T
	err := p.patiently(ctx, func() (err error) {
		out, err = read()
		return err
	})
	return out, err
}

// writeEC2Patiently is writeEC2, with the resources that failed with
// throttling written again (see retryThrottled).
func (p *Provider) writeEC2Patiently(ctx context.Context, region string, ids []string, set, del tags.Set) map[string]error {
	return p.retryThrottled(ctx, ids, func(ids []string) map[string]error { return p.writeEC2(ctx, region, ids, set, del) })
}

// retryThrottled runs write over ids, and again over those it failed with
// throttling, while the waits add up to no more than ThrottlePatience and
// ctx lasts; it returns the errors of the resources that failed in the
// end. A tag write sent again is safe: a deletion is still conditional on
// the value read, one whose tag is gone already deletes nothing, and a set
// tag is set to the same value.
func (p *Provider) retryThrottled(ctx context.Context, ids []string, write func(ids []string) map[string]error) map[string]error {
	start := time.Now()
	failed := write(ids)
	for {
		var again []string
		var wait time.Duration
		for _, id := range slices.Sorted(maps.Keys(failed)) {
			if w, throttled := throttledFor(failed[id]); throttled {
				again, wait = append(again, id), max(wait, w)
			}
		}
		if len(again) == 0 || time.Since(start)+wait > p.patience() || !cloud.Sleep(ctx, wait) {
			return failed
		}
		for _, id := range again {
			delete(failed, id)
		}
		maps.Copy(failed, write(again))
	}
}
