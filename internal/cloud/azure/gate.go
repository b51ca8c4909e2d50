package azure

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tagsync/tagsync/internal/cloud"
)

// bucket is one of ARM's throttling buckets of a subscription: reads (GET,
// HEAD) or writes (every other method); or Resource Graph's quota.
type bucket string

// The buckets.
const (
	bucketReads  bucket = "reads"
	bucketWrites bucket = "writes"
	// bucketGraph is Resource Graph's quota. ARG counts queries per
	// principal and tenant (15 per 5 s by default), not per subscription,
	// and its POSTs are queries, not writes: its gate has no subscription
	// and this bucket, so a throttled query holds the other queries and
	// no subscription's ARM requests. (The client-side budget spends the
	// tenant-level write tokens for it, as for any POST outside a
	// subscription.)
	bucketGraph bucket = "resourcegraph"
)

// bucketOf returns the bucket ARM charges a request of method to.
func bucketOf(method string) bucket {
	if method == http.MethodGet || method == http.MethodHead {
		return bucketReads
	}
	return bucketWrites
}

// gateKey names one gate: ARM endpoint (host), subscription and bucket,
// host and subscription lower-cased; and, for a resource provider's own
// limits, the provider (lower-cased namespace, e.g. "microsoft.compute")
// and, for a limit of one resource, its lower-cased ID.
type gateKey struct {
	host, sub string
	bucket    bucket
	provider  string
	resource  string
}

// gateKeyOf returns the subscription's gate of a request: ARM's own quota.
func gateKeyOf(u *url.URL, method string) gateKey {
	if isGraphPath(u.Path) {
		return gateKey{host: strings.ToLower(u.Host), bucket: bucketGraph}
	}
	return gateKey{host: strings.ToLower(u.Host), sub: strings.ToLower(subscriptionOf(u.Path)), bucket: bucketOf(method)}
}

// gateKeysOf returns every gate a request goes through: the subscription's
// and, for a request of a provider's resource, the provider's gate in that
// subscription and the resource's own.
func gateKeysOf(u *url.URL, method string) []gateKey {
	k := gateKeyOf(u, method)
	provider, resource := targetOf(u.Path)
	if k.bucket == bucketGraph || k.sub == "" || provider == "" {
		return []gateKey{k}
	}
	p := k
	p.provider = provider
	r := p
	r.resource = resource
	return []gateKey{k, p, r}
}

// targetOf returns the provider namespace and ID of the resource an ARM path
// addresses (lower-cased; the Tags API's scope for its path), or "" when it
// addresses none.
func targetOf(path string) (provider, resource string) {
	low := strings.ToLower(strings.TrimSuffix(path, "/"))
	low = strings.TrimSuffix(low, tagsAPISuffix)
	segs := strings.Split(strings.TrimPrefix(low, "/"), "/")
	for i := 0; i+2 < len(segs); i++ {
		if segs[i] == "providers" {
			return segs[i+1], low
		}
	}
	return "", ""
}

// tagsAPISuffix ends the path of the Tags API at a resource's scope.
const tagsAPISuffix = "/providers/microsoft.resources/tags/default"

// scope names the gate in words, e.g. "ARM reads of subscription 0000…".
func (k gateKey) scope() string {
	switch {
	case k.bucket == bucketGraph:
		return "Resource Graph queries"
	case k.sub == "":
		return fmt.Sprintf("ARM %s outside any subscription", k.bucket)
	case k.resource != "":
		return fmt.Sprintf("%s of %s (%s's limit of one resource)", k.bucket, k.resource, k.provider)
	case k.provider != "":
		return fmt.Sprintf("%s %s of subscription %s", k.provider, k.bucket, k.sub)
	}
	return fmt.Sprintf("ARM %s of subscription %s", k.bucket, k.sub)
}

// subscriptionOf returns the subscription of an ARM path
// (/subscriptions/{id}/...), or "".
func subscriptionOf(path string) string {
	segs := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 3)
	if len(segs) >= 2 && strings.EqualFold(segs[0], "subscriptions") {
		return segs[1]
	}
	return ""
}

// ThrottleGates remember ARM's requests for silence: when ARM answers 429
// Too Many Requests (or 503 Service Unavailable) with a Retry-After, the
// gate of that request's (ARM endpoint, subscription, bucket) closes until
// then (Resource Graph's gate also closes when an answer says its quota
// is spent until a reset: x-ms-user-quota-remaining 0), and every later
// HTTP attempt through that gate (first tries, retries and
// long-running-operation polls alike) fails at once with a
// *cloud.ThrottledError instead of being sent. ARM counts its quota per
// subscription and principal, so the gates are shared by every Provider
// of the process (DefaultThrottleGates) unless WithThrottleGates gives a
// Provider its own: do that for Providers that authenticate as different
// principals against the same subscription, and in tests that close a gate
// for long and may meet another server on the same loopback port.
// ThrottleGates are safe for concurrent use; they are cloud.Gates keyed by
// ARM endpoint, subscription and bucket.
type ThrottleGates struct{ *cloud.Gates[gateKey] }

// NewThrottleGates returns gates that are all open.
func NewThrottleGates() *ThrottleGates { return &ThrottleGates{cloud.NewGates[gateKey]()} }

// defaultGates are the process-wide gates.
var defaultGates = NewThrottleGates()

// DefaultThrottleGates returns the process-wide gates that every Provider
// uses unless WithThrottleGates gives it others.
func DefaultThrottleGates() *ThrottleGates { return defaultGates }

// forgetHost opens every gate of an ARM endpoint (tests).
func (g *ThrottleGates) forgetHost(host string) {
	g.Forget(func(k gateKey) bool { return k.host == strings.ToLower(host) })
}

// heldError is an HTTP attempt the gate did not send. It unwraps to the
// *cloud.ThrottledError, and is NonRetriable so that azcore's retry policy
// (which retries transport errors) returns it at once.
type heldError struct {
	t   *cloud.ThrottledError
	key gateKey // the gate that held it
}

// Error says what is throttled, for how long, and that nothing was sent.
func (e *heldError) Error() string {
	return e.t.Error() + " (request not sent: ARM's last answer asked to wait)"
}

// Unwrap returns the *cloud.ThrottledError.
func (e *heldError) Unwrap() error { return e.t }

// NonRetriable marks the error for azcore's retry policy.
func (*heldError) NonRetriable() {}

// nonRetriable marks an error azcore's retry policy must not retry.
type nonRetriable struct{ error }

// Unwrap returns the error.
func (e nonRetriable) Unwrap() error { return e.error }

// NonRetriable marks the error for azcore's retry policy.
func (nonRetriable) NonRetriable() {}

// throttlePolicy is the per-retry pipeline policy in front of every HTTP
// attempt: it holds attempts whose gate is closed, waits for the
// subscription's client-side budget (and hands it ARM's answer, whose
// headers report the quota left), and closes the gate when ARM answers 429
// or 503 with a Retry-After.
type throttlePolicy struct {
	gates  *ThrottleGates
	budget *budget // nil when disabled
	pace   *pace   // the providers' published limits; nil when the budget is disabled
	m      *cloud.RequestMetrics
}

// Do implements policy.Policy.
func (p throttlePolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	keys := gateKeysOf(raw.URL, raw.Method)
	key := keys[0]
	if err := p.hold(keys, raw); err != nil {
		return nil, err
	}
	var t ticket
	if p.budget != nil {
		class := armClassOf(raw.Method)
		if key.bucket == bucketGraph {
			class = armWrites // the tenant-level budget, as any POST outside a subscription
		}
		var err error
		if t, err = p.budget.wait(raw.Context(), key.sub, class); err != nil {
			// The context ended or would end first: a retry cannot do better.
			return nil, nonRetriable{fmt.Errorf("azure: waiting for the client-side request budget: %w", err)}
		}
		// The budget may have waited while another call was throttled.
		if err := p.hold(keys, raw); err != nil {
			p.budget.observe(t, nil)
			return nil, err
		}
	}
	var pt paceTicket
	if len(keys) > 1 {
		if pb := p.pace.bucketOf(keys[1]); pb != nil {
			var err error
			if pt, err = p.pace.wait(raw.Context(), pb); err != nil {
				p.budget.observe(t, nil)
				return nil, nonRetriable{fmt.Errorf("azure: waiting for %s's published limit: %w", keys[1].provider, err)}
			}
		}
	}
	resp, err := req.Next()
	if p.budget != nil {
		p.budget.observe(t, resp)
	}
	if pt.b != nil {
		p.pace.observe(pt, keys[1].provider, resp)
	}
	if d := throttleWait(resp); d > 0 {
		p.closeFor(keys, resp, d)
	} else if d := graphQuotaWait(key, resp); d > 0 {
		p.gates.Close(key, d)
	}
	return resp, err
}

// closeFor closes the gate of the limit a throttled answer names: none for
// a resource another operation holds (the request waits, nothing else
// does); the resource's own for a provider's limit (Compute's budget of
// one VM), and the provider's in the subscription too when another of its
// resources is held already (a limit the provider's resources share); the
// subscription's for ARM's own quota.
func (p throttlePolicy) closeFor(keys []gateKey, resp *http.Response, d time.Duration) {
	switch {
	case anotherOperation(resp):
		return
	case len(keys) == 3 && providerLimited(resp.Header):
		prov, res := keys[1], keys[2]
		if p.gates.ClosedAny(func(k gateKey) bool {
			return k.resource != "" && k.resource != res.resource && k.withoutResource() == prov
		}) {
			p.gates.Close(prov, d)
		}
		p.gates.Close(res, d)
	default:
		p.gates.Close(keys[0], d)
	}
}

// withoutResource returns the provider's gate of a resource's.
func (k gateKey) withoutResource() gateKey {
	k.resource = ""
	return k
}

// providerLimited reports whether an answer reports a resource provider's
// policy with no calls left (x-ms-ratelimit-remaining-resource
// "<provider>/<policy>;0"): the provider, not ARM, refused it.
func providerLimited(h http.Header) bool {
	for _, v := range h.Values("X-Ms-Ratelimit-Remaining-Resource") {
		for _, part := range strings.Split(v, ",") {
			if _, n, ok := strings.Cut(strings.TrimSpace(part), ";"); ok && strings.TrimSpace(n) == "0" {
				return true
			}
		}
	}
	return false
}

// codeAnotherOperation is the 429 a provider answers while another
// operation holds the resource: not throttling.
const codeAnotherOperation = "RetryableErrorDueToAnotherOperation"

// anotherOperation reports whether a 429 says another operation holds the
// resource. It reads the error's code from the body (kept for the SDK).
func anotherOperation(resp *http.Response) bool {
	if resp.StatusCode != http.StatusTooManyRequests {
		return false
	}
	body, err := runtime.Payload(resp)
	if err != nil {
		return false
	}
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && strings.EqualFold(e.Error.Code, codeAnotherOperation)
}

// hold returns a heldError when one of the request's gates is closed,
// naming the one that stays closed longest.
func (p throttlePolicy) hold(keys []gateKey, raw *http.Request) error {
	key, left := p.gates.longest(keys)
	if left <= 0 {
		return nil
	}
	p.m.Held(operationName(raw.Method, raw.URL.Path), string(key.bucket))
	return &heldError{t: &cloud.ThrottledError{Scope: key.scope(), RetryAfter: left}, key: key}
}

// subscriptionWide reports whether err is a throttling of ARM's quota of a
// whole subscription (held at, or answered for, its gate): every other
// request to that subscription would wait too. A provider's limit of one
// resource, or of one provider, is not.
func subscriptionWide(err error) bool {
	var he *heldError
	if errors.As(err, &he) {
		return he.key.provider == "" && he.key.resource == ""
	}
	var ae *armError
	if errors.As(err, &ae) && ae.gate != nil {
		return ae.gate.provider == "" && ae.gate.resource == ""
	}
	return errors.Is(err, cloud.ErrThrottled)
}

// longest returns the key of keys whose gate stays closed longest, and how
// long; 0 when all are open.
func (g *ThrottleGates) longest(keys []gateKey) (gateKey, time.Duration) {
	best, left := keys[0], time.Duration(0)
	for _, k := range keys {
		if d := g.Remaining(k); d > left {
			best, left = k, d
		}
	}
	return best, left
}

// throttleWait is the wait a 429 or 503 answer asks for; 0 for other
// answers and for those without Retry-After.
func throttleWait(resp *http.Response) time.Duration {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return 0
	}
	return retryAfter(resp.Header)
}

// retryAfter reads a wait from response headers in azcore's order of
// preference: retry-after-ms, x-ms-retry-after-ms, then Retry-After in
// seconds or as an HTTP date. 0 when there is none.
func retryAfter(h http.Header) time.Duration {
	for _, name := range []string{"Retry-After-Ms", "X-Ms-Retry-After-Ms"} {
		if ms, err := strconv.Atoi(h.Get(name)); err == nil && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	v := h.Get("Retry-After")
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
