package armsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Compute's own throttling (Microsoft's "Compute throttling limits"): beside
// ARM's subscription bucket, every update of a VM, scale set or scale-set
// instance spends a token of that resource's bucket (12, refilled 4 a
// minute) and of the subscription's (1500, refilled 500 a minute); reads
// spend their policy's buckets (computeReads). A refusal is Compute's 429
// OperationNotAllowed whose details name the policy (its "Throttling error
// details"), and every answer reports each policy's tokens left in its own
// x-ms-ratelimit-remaining-resource header.
const (
	// PolicyComputeResourceUpdates names the per-resource update budget.
	PolicyComputeResourceUpdates = "Microsoft.Compute/UpdateVMResource"
	// PolicyComputeSubscriptionUpdates names the subscription's.
	PolicyComputeSubscriptionUpdates = "Microsoft.Compute/UpdateVMSubscriptionMaximum"
)

// Network's own limits (Microsoft's "Request limits and throttling",
// "Network throttling"): per subscription and region, 1000 writes (PUT,
// PATCH, DELETE) and 10000 reads (GET) every 5 minutes. armsim counts a
// request of a Microsoft.Network resource, a Tags API request at its scope
// included (the Tags API writes the resource through its provider), and
// reports the policy's calls left as Compute does.
const (
	// PolicyNetworkWrites names Network's write budget.
	PolicyNetworkWrites = "Microsoft.Network/WriteSubscription5Min"
	// PolicyNetworkReads names its read budget.
	PolicyNetworkReads = "Microsoft.Network/ReadSubscription5Min"
	// PolicyPrivateDNSReads names Azure Private DNS's read budget: 500
	// reads (GET) every 5 minutes ("Request limits and throttling",
	// "Network throttling": "Azure Private DNS has a throttle limit of 500
	// read (GET) operations per 5 minutes"), of a subscription's private
	// DNS zones and their record sets, a Tags API read at their scope
	// included, spent besides Network's.
	PolicyPrivateDNSReads = "Microsoft.Network/PrivateDnsReadSubscription5Min"
)

// applyNetworkThrottle spends a token of Network's budget for a request of
// one of its resources; it answers 429 and returns false when it is empty.
func (s *Server) applyNetworkThrottle(w http.ResponseWriter, r *http.Request, rt *route) bool {
	target := rt.scope
	if target == "" {
		target = "/" + strings.Join(rt.segs, "/")
	}
	if rt.sub == "" || !strings.EqualFold(providerOf(target), "Microsoft.Network") || rt.op == opGraph {
		return true
	}
	cfg := s.throttle.config()
	policy, b := PolicyNetworkWrites, cfg.NetworkWrites
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		policy, b = PolicyNetworkReads, cfg.NetworkReads
	}
	if policy != PolicyNetworkReads || !isPrivateDNS(target) {
		return s.takeNetwork(w, rt, policy, b)
	}
	if !s.takeNetwork(w, rt, PolicyPrivateDNSReads, cfg.PrivateDNSReads) {
		return false
	}
	if !s.takeNetwork(w, rt, policy, b) {
		s.throttle.refund(networkKey(rt, PolicyPrivateDNSReads))
		return false
	}
	return true
}

// networkKey names the bucket of one of Network's policies in rt's
// subscription.
func networkKey(rt *route, policy string) string {
	return "network|" + strings.ToLower(rt.sub) + "|" + policy
}

// isPrivateDNS reports whether an ARM path is of a private DNS zone or
// one of its record sets.
func isPrivateDNS(path string) bool {
	return strings.Contains(strings.ToLower(path), "/providers/microsoft.network/privatednszones/")
}

// takeNetwork spends a token of one of Network's policies, reporting what
// is left; it answers 429 and returns false when the policy is spent.
func (s *Server) takeNetwork(w http.ResponseWriter, rt *route, policy string, b Bucket) bool {
	left, wait, ok := s.throttle.takeFrom(networkKey(rt, policy), b)
	if ok {
		w.Header().Add(remainingResourceHeader, fmt.Sprintf("%s;%d", policy, left))
		return true
	}
	w.Header().Add(remainingResourceHeader, policy+";0")
	setRetryAfter(w.Header(), wait)
	writeError(w, newError(http.StatusTooManyRequests, "TooManyRequests",
		"The request was throttled: subscription '%s' exceeded %s (%d requests per 5 minutes). Retry after %d seconds.",
		rt.sub, policy, int(b.Capacity), retryAfterSeconds(wait)))
	return false
}

// providerOf returns the namespace after the first "providers" segment of
// an ARM path, or "".
func providerOf(path string) string {
	segs := splitPath(path)
	for i := 0; i+1 < len(segs); i++ {
		if strings.EqualFold(segs[i], "providers") {
			return segs[i+1]
		}
	}
	return ""
}

// remainingResourceHeader is where a resource provider reports a policy's
// tokens left: "<provider>/<policy>;<count>", one header per policy.
const remainingResourceHeader = "x-ms-ratelimit-remaining-resource"

// computePolicy is one of Compute's throttling policies: its buckets per
// resource (none for a policy of the subscription only) and per
// subscription, each reported under its own name.
type computePolicy struct {
	resourceName, subName string
	resource              *Bucket
	sub                   Bucket
}

// perMinute is a bucket of capacity tokens refilled refill a minute, as
// "Compute throttling limits" states them.
func perMinute(refill, capacity float64) Bucket {
	return Bucket{Capacity: capacity, RefillPerSecond: refill / 60}
}

// computeReads are Compute's read policies of the operations armsim serves,
// from the tables of "Compute throttling limits": Low Cost Get VM (a VM's
// Get: 12 a minute, 36 at most, per VM; 8000 and 24,000 per subscription),
// High Cost Get VM (List, List All: 300 and 900, subscription only), Low
// Cost Get VMSS (a scale set's Get: 12/36; 800/2400), High Cost Get VMSS
// (List, List All: 360 and 1,080, subscription only) and Get VMSS VMs (an
// instance's Get: 12/36; 2000/6000). Listing a scale set's instances is in
// none of the tables, so only ARM's bucket limits it.
var computeReads = map[string]computePolicy{
	"VirtualMachines.Get":             readPolicy("LowCostGetVM", ptr(perMinute(12, 36)), perMinute(8000, 24000)),
	"VirtualMachines.List":            readPolicy("HighCostGetVM", nil, perMinute(300, 900)),
	"VirtualMachines.ListAll":         readPolicy("HighCostGetVM", nil, perMinute(300, 900)),
	"VirtualMachineScaleSets.Get":     readPolicy("LowCostGetVMScaleSet", ptr(perMinute(12, 36)), perMinute(800, 2400)),
	"VirtualMachineScaleSets.List":    readPolicy("HighCostGetVMScaleSet", nil, perMinute(360, 1080)),
	"VirtualMachineScaleSets.ListAll": readPolicy("HighCostGetVMScaleSet", nil, perMinute(360, 1080)),
	"VirtualMachineScaleSetVMs.Get":   readPolicy("GetVMScaleSetVM", ptr(perMinute(12, 36)), perMinute(2000, 6000)),
}

// readPolicy names a read policy's buckets Microsoft.Compute/<name>Resource
// and Microsoft.Compute/<name>Subscription.
func readPolicy(name string, resource *Bucket, sub Bucket) computePolicy {
	return computePolicy{resourceName: "Microsoft.Compute/" + name + "Resource", subName: "Microsoft.Compute/" + name + "Subscription",
		resource: resource, sub: sub}
}

func ptr[T any](v T) *T { return &v }

// computePolicyOf is the policy rt spends, if any.
func (s *Server) computePolicyOf(rt *route) (computePolicy, bool) {
	if isComputeUpdate(rt) {
		cfg := s.throttle.config()
		return computePolicy{resourceName: PolicyComputeResourceUpdates, subName: PolicyComputeSubscriptionUpdates,
			resource: &cfg.ComputeResourceUpdates, sub: cfg.ComputeSubscriptionUpdates}, true
	}
	p, ok := computeReads[rt.op]
	return p, ok
}

// applyComputeThrottle spends the tokens of the Compute policy of rt; it
// answers 429 and returns false when one is empty (a token the other
// bucket gave is given back: the request was not served).
func (s *Server) applyComputeThrottle(w http.ResponseWriter, rt *route) bool {
	p, ok := s.computePolicyOf(rt)
	if !ok {
		return true
	}
	resKey := "compute|" + p.resourceName + "|" + strings.ToLower(strings.Join(rt.segs, "/"))
	subKey := "compute|" + p.subName + "|" + strings.ToLower(rt.sub)
	rLeft := -1
	if p.resource != nil {
		left, wait, ok := s.throttle.takeFrom(resKey, *p.resource)
		if !ok {
			computeThrottled(w, p.resourceName, wait, *p.resource)
			return false
		}
		rLeft = left
	}
	sLeft, wait, ok := s.throttle.takeFrom(subKey, p.sub)
	if !ok {
		if p.resource != nil {
			s.throttle.refund(resKey)
		}
		computeThrottled(w, p.subName, wait, p.sub)
		return false
	}
	if rLeft >= 0 {
		w.Header().Add(remainingResourceHeader, fmt.Sprintf("%s;%d", p.resourceName, rLeft))
	}
	w.Header().Add(remainingResourceHeader, fmt.Sprintf("%s;%d", p.subName, sLeft))
	return true
}

// isComputeUpdate reports whether rt updates a VM, scale set or instance.
func isComputeUpdate(rt *route) bool {
	switch rt.op {
	case "VirtualMachines.Update", "VirtualMachineScaleSets.Update", "VirtualMachineScaleSetVMs.Update":
		return true
	}
	return false
}

// computeThrottled answers Compute's 429 for policy.
func computeThrottled(w http.ResponseWriter, policy string, wait time.Duration, b Bucket) {
	h := w.Header()
	h.Add(remainingResourceHeader, policy+";0")
	setRetryAfter(h, wait)
	group := policy[strings.Index(policy, "/")+1:]
	detail, _ := json.Marshal(map[string]any{"operationGroup": group, "allowedRequestCount": int(b.Capacity)})
	e := newError(http.StatusTooManyRequests, "OperationNotAllowed",
		"The server rejected the request because too many requests have been received for this subscription.")
	e.Details = []ErrorDetail{{Code: "TooManyRequests", Target: group, Message: string(detail)}}
	writeError(w, e)
}

// CodeAnotherOperation is the 429 a resource provider answers when another
// operation holds the resource (Microsoft's "Request limits and throttling":
// Network answers it while the target is locked by another operation). It
// is not throttling: the subscription's other requests go on.
const CodeAnotherOperation = "RetryableErrorDueToAnotherOperation"

// lockRetryAfter is the wait a lock-contention answer asks for.
const lockRetryAfter = time.Second

// resourceLocks are resources another operation holds (LockResource).
type resourceLocks struct {
	mu sync.Mutex
	m  map[string]int // lower-cased ID → holders
}

// held reports whether id is held.
func (l *resourceLocks) held(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[strings.ToLower(id)] > 0
}

// LockResource makes as if another operation were running on id (a scale
// set's reimage, a load balancer's rule update): until release is called,
// every write of it (its Tags API scope, a Compute update) answers 429
// RetryableErrorDueToAnotherOperation with Retry-After 1. release is safe to
// call more than once.
func (s *Server) LockResource(id string) (release func()) {
	key := strings.ToLower(strings.TrimSuffix(id, "/"))
	s.locks.mu.Lock()
	if s.locks.m == nil {
		s.locks.m = map[string]int{}
	}
	s.locks.m[key]++
	s.locks.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.locks.mu.Lock()
			defer s.locks.mu.Unlock()
			if s.locks.m[key]--; s.locks.m[key] <= 0 {
				delete(s.locks.m, key)
			}
		})
	}
}

// applyLock answers a write of a held resource with the lock-contention 429
// and returns false.
func (s *Server) applyLock(w http.ResponseWriter, r *http.Request, rt *route) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	target := rt.scope
	if target == "" {
		target = "/" + strings.Join(rt.segs, "/")
	}
	if !s.locks.held(target) {
		return true
	}
	setRetryAfter(w.Header(), lockRetryAfter)
	writeError(w, newError(http.StatusTooManyRequests, CodeAnotherOperation,
		"Operation '%s' on resource '%s' cannot proceed because another operation on it is in progress. Retry after %d seconds.",
		rt.op, target, int(lockRetryAfter.Seconds())))
	return false
}
