package armsim

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// requestClass is the throttling class of a request.
type requestClass string

const (
	classReads   requestClass = "reads"
	classWrites  requestClass = "writes"
	classDeletes requestClass = "deletes"
	classGraph   requestClass = "graph"
)

func classOf(r *http.Request, rt *route) requestClass {
	switch {
	case rt.op == opGraph:
		return classGraph
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return classReads
	case r.Method == http.MethodDelete:
		return classDeletes
	}
	return classWrites
}

// bucketState is one token bucket's level.
type bucketState struct {
	tokens float64
	last   time.Time
}

// throttler keeps ARM's token buckets, one per (scope, class).
type throttler struct {
	mu      sync.Mutex
	cfg     ThrottleOptions
	clock   Clock
	buckets map[string]*bucketState
}

func newThrottler(cfg ThrottleOptions, clock Clock) *throttler {
	return &throttler{cfg: cfg, clock: clock, buckets: map[string]*bucketState{}}
}

func (t *throttler) bucket(c requestClass) Bucket {
	switch c {
	case classWrites:
		return t.cfg.Writes
	case classDeletes:
		return t.cfg.Deletes
	case classGraph:
		return t.cfg.Graph
	}
	return t.cfg.Reads
}

// take spends one token from the bucket of scope and class. It returns the
// tokens left and, when none was available, how long until one is.
func (t *throttler) take(scope string, c requestClass) (left int, wait time.Duration, ok bool) {
	return t.takeFrom(scope+"|"+string(c), t.bucket(c))
}

// takeFrom spends one token from the bucket named key, configured as cfg.
func (t *throttler) takeFrom(key string, cfg Bucket) (left int, wait time.Duration, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	b := t.buckets[key]
	if b == nil {
		b = &bucketState{tokens: cfg.Capacity, last: now}
		t.buckets[key] = b
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(cfg.Capacity, b.tokens+el*cfg.RefillPerSecond)
	}
	b.last = now
	if t.cfg.Disabled {
		return int(b.tokens), 0, true
	}
	if b.tokens < 1 {
		need := (1 - b.tokens) / cfg.RefillPerSecond
		return 0, time.Duration(math.Ceil(need*1000)) * time.Millisecond, false
	}
	b.tokens--
	return int(b.tokens), 0, true
}

// refund gives back the token takeFrom spent from key's bucket.
func (t *throttler) refund(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.buckets[key]; b != nil && !t.cfg.Disabled {
		b.tokens++
	}
}

// config returns the configuration in force.
func (t *throttler) config() ThrottleOptions {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cfg
}

// set replaces the configuration and refills every bucket.
func (t *throttler) set(cfg ThrottleOptions) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cfg = cfg.withDefaults()
	t.buckets = map[string]*bucketState{}
}

// reset refills every bucket.
func (t *throttler) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buckets = map[string]*bucketState{}
}

// applyThrottle spends a token for the request and sets ARM's headers; it
// answers 429 and returns false when the bucket is empty.
func (s *Server) applyThrottle(w http.ResponseWriter, r *http.Request, rt *route) bool {
	c := classOf(r, rt)
	scope, kind := strings.ToLower(rt.sub), "subscription"
	if scope == "" || c == classGraph {
		scope, kind = "tenant:"+s.opts.TenantID, "tenant"
	}
	left, wait, ok := s.throttle.take(scope, c)
	h := w.Header()
	if c == classGraph {
		h.Set("x-ms-user-quota-remaining", strconv.Itoa(left))
		h.Set("x-ms-user-quota-resets-after", formatHMS(s.throttle.bucket(c)))
	} else {
		h.Set("x-ms-ratelimit-remaining-"+kind+"-"+string(c), strconv.Itoa(left))
	}
	if ok {
		return true
	}
	setRetryAfter(h, wait)
	writeError(w, throttleError(c, rt.sub, wait))
	return false
}

func throttleError(c requestClass, sub string, wait time.Duration) *Error {
	secs := int(math.Ceil(wait.Seconds()))
	if c == classGraph {
		return newError(http.StatusTooManyRequests, "RateLimiting",
			"Rate limit exceeded for Resource Graph queries. Please retry after %d seconds.", secs)
	}
	return newError(http.StatusTooManyRequests, "SubscriptionRequestsThrottled",
		"Number of '%s' requests for subscription '%s' actor 'armsim' exceeded. Please try again after '%d' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling for additional information.",
		strings.TrimSuffix(string(c), "s"), sub, secs)
}

// setRetryAfter sets Retry-After in whole seconds, rounded up, and nothing
// else: ARM and the resource providers send only that on a 429 or 503 (the
// millisecond headers azcore also reads are not promised), so a client
// waits at least a second, as it would on Azure.
func setRetryAfter(h http.Header, d time.Duration) {
	h.Set("Retry-After", strconv.Itoa(retryAfterSeconds(d)))
}

// retryAfterSeconds is a wait as Retry-After states it: whole seconds,
// rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int { return max(int(math.Ceil(d.Seconds())), 1) }

// formatHMS renders the time a bucket takes to refill completely.
func formatHMS(b Bucket) string {
	d := time.Duration(b.Capacity / b.RefillPerSecond * float64(time.Second))
	return fmt.Sprintf("%02d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}

// SetThrottle replaces the throttling configuration at run time (zero
// fields take ARM's values) and refills all buckets.
func (s *Server) SetThrottle(t ThrottleOptions) { s.throttle.set(t) }
