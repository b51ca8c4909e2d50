package testenv

import (
	"net/url"
	"strings"
	"sync"
	"time"
)

// EC2Bucket is one of EC2's request token buckets: Capacity tokens at most,
// Refill tokens added a second; each request takes one token, and a request
// that finds none is refused with RequestLimitExceeded.
type EC2Bucket struct {
	Capacity float64
	Refill   float64
}

// EC2's request token buckets, from the EC2 developer guide, "Request
// throttling for the Amazon EC2 API" (Request token bucket sizes and refill
// rates). Each API action has a bucket of its own ("each API is evaluated
// individually"), sized by its category.
var (
	// EC2NonMutatingBucket is the bucket of Describe*, List*, Search* and
	// Get* actions not in another category.
	EC2NonMutatingBucket = EC2Bucket{Capacity: 100, Refill: 20}
	// EC2UnfilteredBucket is the smaller bucket that the actions of
	// ec2UnfilteredActions take from when called with neither a filter nor
	// pagination.
	EC2UnfilteredBucket = EC2Bucket{Capacity: 50, Refill: 10}
	// EC2MutatingBucket is the bucket of mutating actions not in another
	// category (the resource-intensive actions have the same size).
	EC2MutatingBucket = EC2Bucket{Capacity: 50, Refill: 5}
)

// ec2UnfilteredActions are the "Unfiltered and unpaginated non-mutating
// actions" of the throttling guide.
var ec2UnfilteredActions = map[string]bool{
	"DescribeInstances": true, "DescribeInstanceStatus": true, "DescribeNetworkInterfaces": true,
	"DescribeSecurityGroups": true, "DescribeSnapshots": true, "DescribeSpotInstanceRequests": true,
	"DescribeVolumes": true,
}

// ec2UncategorizedBuckets are the guide's "Uncategorized actions" that
// tests and benchmarks call, with their own sizes. (The guide lists more;
// an action missing here takes its category's bucket.)
var ec2UncategorizedBuckets = map[string]EC2Bucket{
	"CreateTags":                  {Capacity: 100, Refill: 10},
	"DeleteTags":                  {Capacity: 100, Refill: 10},
	"RunInstances":                {Capacity: 5, Refill: 2},
	"StartInstances":              {Capacity: 5, Refill: 2},
	"TerminateInstances":          {Capacity: 100, Refill: 5},
	"CreateLaunchTemplateVersion": {Capacity: 100, Refill: 5},
	"ModifyLaunchTemplate":        {Capacity: 100, Refill: 5},
	"CreateVolume":                {Capacity: 100, Refill: 5},
	"DeleteVolume":                {Capacity: 100, Refill: 5},
	"CreateSnapshot":              {Capacity: 100, Refill: 5},
	"CreateNetworkInterface":      {Capacity: 100, Refill: 5},
	"DeleteNetworkInterface":      {Capacity: 100, Refill: 5},
}

// DefaultEC2Bucket returns AWS's bucket for an EC2 action; unfiltered says
// whether the call names neither a filter nor pagination.
func DefaultEC2Bucket(action string, unfiltered bool) EC2Bucket {
	if b, ok := ec2UncategorizedBuckets[action]; ok {
		return b
	}
	if isReadAction(action) {
		if unfiltered && ec2UnfilteredActions[action] {
			return EC2UnfilteredBucket
		}
		return EC2NonMutatingBucket
	}
	return EC2MutatingBucket
}

// isReadAction reports whether an action only reads (the throttling
// guide's non-mutating prefixes).
func isReadAction(action string) bool {
	for _, p := range []string{"Describe", "List", "Search", "Get"} {
		if strings.HasPrefix(action, p) {
			return true
		}
	}
	return false
}

// tokenBucket is one bucket's state; tokens refill continuously.
type tokenBucket struct {
	EC2Bucket
	tokens float64
	at     time.Time
}

// ec2Throttle holds the buckets of each account and region (EC2 throttles
// "for each AWS account on a per-Region basis").
type ec2Throttle struct {
	mu        sync.Mutex
	buckets   map[string]*tokenBucket
	overrides map[string]EC2Bucket
	// tagging are the Tagging API's buckets set by SetTaggingBucket, by
	// account and operation.
	tagging map[string]EC2Bucket
	now     func() time.Time
}

// SetEC2Bucket sets the bucket of an EC2 action, for both of its buckets
// where it has two (filtered and unfiltered), and refills it: a test
// shrinks a bucket to see throttling without thousands of calls. The
// default is AWS's (DefaultEC2Bucket).
func (a *AWSRules) SetEC2Bucket(action string, b EC2Bucket) {
	t := &a.throttle
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.overrides == nil {
		t.overrides = map[string]EC2Bucket{}
	}
	t.overrides[action] = b
	for key := range t.buckets {
		if kind := key[strings.LastIndex(key, "|")+1:]; kind == action || kind == action+"/unfiltered" {
			delete(t.buckets, key)
		}
	}
}

// ResetEC2Bucket gives action AWS's own buckets back (both its filtered and
// its unfiltered one), undoing SetEC2Bucket, with full buckets.
func (a *AWSRules) ResetEC2Bucket(action string) {
	t := &a.throttle
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.overrides, action)
	for key := range t.buckets {
		if kind := key[strings.LastIndex(key, "|")+1:]; kind == action || kind == action+"/unfiltered" {
			delete(t.buckets, key)
		}
	}
}

// take takes a token for an EC2 call and reports whether there was one.
func (t *ec2Throttle) take(account, action string, form url.Values) bool {
	unfiltered := ec2UnfilteredActions[action] && !hasFilterOrPagination(form)
	kind := action
	if unfiltered {
		kind += "/unfiltered"
	}
	key := account + "|" + kind
	t.mu.Lock()
	defer t.mu.Unlock()
	size, ok := t.overrides[action]
	if !ok {
		size = DefaultEC2Bucket(action, unfiltered)
	}
	return t.takeLocked(key, size)
}

// takeLocked takes a token of the bucket key (made full, of size, when it
// is new) and reports whether there was one; the caller holds t.mu.
func (t *ec2Throttle) takeLocked(key string, size EC2Bucket) bool {
	now := time.Now()
	if t.now != nil {
		now = t.now()
	}
	b := t.buckets[key]
	if b == nil {
		b = &tokenBucket{EC2Bucket: size, tokens: size.Capacity, at: now}
		if t.buckets == nil {
			t.buckets = map[string]*tokenBucket{}
		}
		t.buckets[key] = b
	}
	b.tokens = min(b.Capacity, b.tokens+now.Sub(b.at).Seconds()*b.Refill)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// hasFilterOrPagination reports whether an EC2 call names a filter or asks
// for pages (MaxResults, NextToken).
func hasFilterOrPagination(form url.Values) bool {
	for key := range form {
		if strings.HasPrefix(key, "Filter.") || key == "MaxResults" || key == "NextToken" {
			return true
		}
	}
	return false
}

// SetTaggingBucket gives the Resource Groups Tagging API's operation op
// (GetResources, TagResources, UntagResources) a request bucket in account
// (moto's x-moto-account-id; "" for callers that name none): a call that
// finds it empty is refused with ThrottledException (HTTP 400), the error
// the Tagging API reference lists for every operation ("The request was
// denied to limit the rate of requests"). AWS publishes no rate for the
// Tagging API, so by default the rules throttle none of its calls; a test
// of what tagsync does when it is throttled sets one.
func (a *AWSRules) SetTaggingBucket(account, op string, b EC2Bucket) {
	t := &a.throttle
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tagging == nil {
		t.tagging = map[string]EC2Bucket{}
	}
	key := account + "|tagging:" + op
	t.tagging[key] = b
	delete(t.buckets, key)
}

// takeTagging takes a token for a Tagging API call of the caller's and
// reports whether there was one (always, for an operation without a
// bucket).
func (t *ec2Throttle) takeTagging(caller awsCaller, op string) bool {
	key := caller.account + "|tagging:" + op
	t.mu.Lock()
	defer t.mu.Unlock()
	size, ok := t.tagging[key]
	return !ok || t.takeLocked(key, size)
}
