package azure

import (
	"math"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

func TestThrottledRequestsAreRetriedAndCounted(t *testing.T) {
	env := startArmsim(t)
	sub := env.SubscriptionID
	env.vm("rg", armsim.VirtualMachine{Name: "vm"})
	p := env.provider()
	env.Server.AddFault(armsim.Fault{Operation: "VirtualMachines.List", Count: 2, Status: http.StatusTooManyRequests,
		Code: "SubscriptionRequestsThrottled", RetryAfter: 10 * time.Millisecond})
	snap, err := p.Snapshot(t.Context(), []cloud.Node{node("vm", vmProviderID(sub, "rg", "vm"), nil)}, cloud.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Placements["vm"].Managed {
		t.Fatalf("placement %+v", snap.Placements["vm"])
	}
	op := map[string]string{"provider": "azure", "operation": "VirtualMachines.List"}
	for code, want := range map[string]float64{"429": 2, "200": 1} {
		l := map[string]string{"code": code}
		for k, v := range op {
			l[k] = v
		}
		if got := counterValue(t, p.reg, cloud.MetricRequests, l); got != want {
			t.Errorf("%s{code=%s} = %v, want %v", cloud.MetricRequests, code, got, want)
		}
	}
	if got := counterValue(t, p.reg, cloud.MetricThrottled, op); got != 2 {
		t.Errorf("%s = %v, want 2", cloud.MetricThrottled, got)
	}
	if got := counterValue(t, p.reg, cloud.MetricRequestDuration, op); got != 3 {
		t.Errorf("%s observations = %v, want 3", cloud.MetricRequestDuration, got)
	}
	if got := p.Calls()["VirtualMachines.List"]; got != 3 {
		t.Errorf("Calls = %v", p.Calls())
	}
}

// TestClientBudgetKeepsUnderServerLimit sends the same burst of reads twice
// against a server bucket of 10 tokens refilled at 40/s: without the
// client-side budget the server throttles (and the SDK retries until every
// read succeeds); with a budget of 20/s (burst 5) it never has to.
func TestClientBudgetKeepsUnderServerLimit(t *testing.T) {
	env := startArmsim(t)
	sub := env.SubscriptionID
	env.vm("rg", armsim.VirtualMachine{Name: "vm"})
	big := armsim.Bucket{Capacity: 1000, RefillPerSecond: 1000}
	env.Server.SetThrottle(armsim.ThrottleOptions{Reads: armsim.Bucket{Capacity: 10, RefillPerSecond: 40}, Writes: big, Deletes: big, Graph: big})
	nodes := []cloud.Node{node("vm", vmProviderID(sub, "rg", "vm"), nil)}
	const reads = 30

	burst := func(p *testProvider) int {
		t.Helper()
		env.Server.ResetCalls()
		for range reads {
			if _, err := p.Snapshot(t.Context(), nodes, cloud.ReadOptions{Fresh: true}); err != nil {
				t.Fatal(err)
			}
		}
		c := env.Server.Calls()
		if ok := c.CountStatus("VirtualMachines.List", http.StatusOK); ok != reads {
			t.Fatalf("%d successful lists, want %d", ok, reads)
		}
		return c.CountStatus("VirtualMachines.List", http.StatusTooManyRequests)
	}

	budgeted := env.provider(WithRateLimit(RateLimit{ReadsPerSecond: 20, ReadBurst: 5}))
	if throttled := burst(budgeted); throttled != 0 {
		t.Errorf("with the client budget the server throttled %d requests, want 0", throttled)
	}
	unbudgeted := env.provider(WithRateLimit(RateLimit{Disabled: true}))
	if throttled := burst(unbudgeted); throttled == 0 {
		t.Error("without the client budget the server never throttled: the test proves nothing")
	}
	if got := counterValue(t, unbudgeted.reg, cloud.MetricThrottled, nil); got == 0 {
		t.Errorf("%s not counted", cloud.MetricThrottled)
	}
}

func TestOperationName(t *testing.T) {
	const rg = "/subscriptions/s/resourceGroups/g/providers/"
	for _, c := range []struct{ method, path, want string }{
		{"GET", rg + "Microsoft.Compute/virtualMachines", "VirtualMachines.List"},
		{"GET", rg + "Microsoft.Compute/virtualMachines/vm-1", "VirtualMachines.Get"},
		{"PATCH", rg + "Microsoft.Compute/virtualMachines/vm-1", "VirtualMachines.Update"},
		{"GET", rg + "Microsoft.Compute/virtualMachineScaleSets", "VirtualMachineScaleSets.List"},
		{"PATCH", rg + "Microsoft.Compute/virtualMachineScaleSets/ss", "VirtualMachineScaleSets.Update"},
		{"GET", rg + "Microsoft.Compute/virtualMachineScaleSets/ss/virtualMachines", "VirtualMachineScaleSetVMs.List"},
		{"GET", "/subscriptions/s/providers/Microsoft.Compute/virtualMachines", "VirtualMachines.ListAll"},
		{"PATCH", rg + "Microsoft.Compute/virtualMachines/vm-1/providers/Microsoft.Resources/tags/default", "Tags.UpdateAtScope"},
		{"GET", rg + "Microsoft.Compute/virtualMachines/vm-1/providers/Microsoft.Resources/tags/default", "Tags.GetAtScope"},
		{"GET", "/subscriptions/s/providers/Microsoft.Compute/locations/eastus/operations/abc", "LRO.Poll"},
		{"GET", "/subscriptions/s/providers/Microsoft.Resources/locations/eastus/operationresults/abc", "LRO.Poll"},
		{"GET", rg + "Microsoft.Network/loadBalancers/lb", "microsoft.network/loadbalancers.Get"},
		{"GET", "/subscriptions/s/resources", "Resources.List"},
		{"GET", "/subscriptions/s/resourcegroups/g", "ResourceGroups.Get"},
		{"POST", "/providers/Microsoft.ResourceGraph/resources", "ResourceGraph.Resources"},
	} {
		if got := operationName(c.method, c.path); got != c.want {
			t.Errorf("operationName(%s %s) = %q, want %q", c.method, c.path, got, c.want)
		}
	}
}

// armBucket models one of ARM's token buckets, as armsim keeps them:
// capacity tokens at first, refilled continuously, and the remaining
// count reported as the whole tokens left after the charge.
type armBucket struct {
	tokens, capacity, refill float64
	last                     time.Time
	minLeft                  float64 // the fewest tokens left after a charge
	throttled                int     // requests that found no token (429)
}

func newARMBucket(capacity, refill float64, now time.Time) *armBucket {
	return &armBucket{tokens: capacity, capacity: capacity, refill: refill, last: now, minLeft: capacity}
}

// charge spends a token at now and returns the remaining count ARM reports.
func (a *armBucket) charge(now time.Time) int {
	if dt := now.Sub(a.last).Seconds(); dt > 0 {
		a.tokens = math.Min(a.capacity, a.tokens+dt*a.refill)
		a.last = now
	}
	if a.tokens < 1 {
		a.throttled++
		return 0
	}
	a.tokens--
	a.minLeft = math.Min(a.minLeft, a.tokens)
	return int(a.tokens)
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// sendNow lets one request through cb at now if the budget allows, with
// ARM answering at once (a client with one request in flight).
func sendNow(cb *classBudget, arm *armBucket, now time.Time) bool {
	if cb.take(now) != 0 {
		return false
	}
	t := cb.send(false)
	cb.observe(now, t, arm.charge(now), true)
	return true
}

// burstAt sends as many requests at now as the budget allows.
func burstAt(cb *classBudget, arm *armBucket, now time.Time) int {
	n := 0
	for sendNow(cb, arm, now) {
		n++
	}
	return n
}

// runFor keeps a one-at-a-time client busy from start for d, in steps of
// 1 ms, and returns the requests sent.
func runFor(cb *classBudget, arm *armBucket, start time.Time, d time.Duration) int {
	n := 0
	for at := start; at.Before(start.Add(d)); at = at.Add(time.Millisecond) {
		n += burstAt(cb, arm, at)
	}
	return n
}

// TestBudgetWithoutReportsIsConservative: until ARM reports its level the
// budget is the configured (or default) token bucket.
func TestBudgetWithoutReportsIsConservative(t *testing.T) {
	cb := newClassBudget(armWrites, classConfigOf(RateLimit{}, armWrites), true, t0)
	n := 0
	for cb.take(t0) == 0 {
		cb.send(false)
		n++
	}
	if n != DefaultWriteBurst {
		t.Fatalf("burst of %d, want %d", n, DefaultWriteBurst)
	}
	if d := cb.take(t0); d != time.Second/DefaultWritesPerSecond {
		t.Fatalf("next request in %s, want %s", d, time.Second/DefaultWritesPerSecond)
	}
	// An answer without the header changes nothing.
	cb.observe(t0, ticket{cb: cb}, 0, false)
	if d := cb.take(t0); d != time.Second/DefaultWritesPerSecond || cb.known {
		t.Fatalf("after an answer without a report: next in %s, known %v", d, cb.known)
	}
}

// TestBudgetSpendsARMQuotaDownToTheReserve: with ARM's reports and no
// other client, the budget spends ARM's bucket of 200 writes down to the
// small reserve of 4 at once, then paces at ARM's 10/s: 0 × 429, ARM never
// holds less than the reserve, and no report is taken for another client.
func TestBudgetSpendsARMQuotaDownToTheReserve(t *testing.T) {
	cb := newClassBudget(armWrites, classConfigOf(RateLimit{}, armWrites), true, t0)
	arm := newARMBucket(200, 10, t0)
	// ARM's 200 less the reserve of 4, less one: the largest report
	// (199) is what the budget knows of ARM's bucket.
	if n := burstAt(cb, arm, t0); n != 195 {
		t.Errorf("burst of %d writes, want 195 (ARM's 200 less the reserve of 4, less one)", n)
	}
	if cb.reserve(t0) != 4 || !cb.known || cb.low {
		t.Fatalf("reserve %v, known %v, low %v", cb.reserve(t0), cb.known, cb.low)
	}
	if cb.pace.Rate != 10 {
		t.Errorf("pace %v/s, want 10", cb.pace.Rate)
	}
	n := runFor(cb, arm, t0.Add(time.Millisecond), 60*time.Second)
	if n < 595 || n > 10*60 {
		t.Errorf("%d writes in the next 60 s, want 10/s", n)
	}
	if arm.throttled != 0 || arm.minLeft < 4 || cb.share.turns != 0 {
		t.Errorf("%d × 429, ARM down to %v tokens, %d reports taken for another client: want none, at least the reserve of 4, none",
			arm.throttled, arm.minLeft, cb.share.turns)
	}
}

// TestBudgetSlowsDownForAnotherClient: another client spends the same
// quota; ARM's reports drop, the budget leaves it the larger reserve and
// part of the refill and takes fewer, and below the reserve falls back to
// the conservative rate; a whole refill of the bucket after the other
// client stopped, the budget spends as when alone again.
func TestBudgetSlowsDownForAnotherClient(t *testing.T) {
	cb := newClassBudget(armWrites, classConfigOf(RateLimit{}, armWrites), true, t0)
	arm := newARMBucket(200, 10, t0)
	burstAt(cb, arm, t0)
	// The other client writes 4/s for 60 s: ARM refills 10/s, so about 6/s
	// are left for the budget.
	mine, now := 0, t0
	for i := range 60_000 {
		now = t0.Add(time.Duration(i+1) * time.Millisecond)
		if i%250 == 0 {
			arm.charge(now)
		}
		mine += burstAt(cb, arm, now)
	}
	t.Logf("%d writes in 60 s beside another client", mine)
	if mine > 6*60+10 || mine < 5*60 {
		t.Errorf("%d writes in 60 s beside another client writing 4/s, want about 6/s", mine)
	}
	if !cb.share.others(now) || cb.reserve(now) != 20 || cb.pace.Rate != 9.5 {
		t.Errorf("beside another client: others %v, reserve %v, pace %v/s; want the shared reserve of 20 and 9.5/s",
			cb.share.others(now), cb.reserve(now), cb.pace.Rate)
	}
	if arm.throttled != 0 {
		t.Errorf("%d × 429", arm.throttled)
	}
	// The other client takes 15 tokens at once: the next report is below
	// the reserve, and the budget slows to the conservative 4/s.
	for range 15 {
		arm.charge(now)
	}
	now = now.Add(time.Millisecond)
	for !sendNow(cb, arm, now) {
		now = now.Add(time.Millisecond)
	}
	if !cb.low || cb.pace.Rate != DefaultWritesPerSecond {
		t.Fatalf("after a report below the reserve: low %v, pace %v/s, want the conservative %d/s", cb.low, cb.pace.Rate, DefaultWritesPerSecond)
	}
	if d := cb.take(now); d < time.Second {
		t.Errorf("next write in %s after a report of %d tokens left", d, int(arm.tokens))
	}
	// Alone again: back to 9.5/s once ARM has refilled, and to ARM's
	// 10/s and the small reserve a whole refill (20 s) after the other
	// client was last seen.
	runFor(cb, arm, now, 10*time.Second)
	if cb.low || cb.pace.Rate != 9.5 {
		t.Errorf("10 s alone again: low %v, pace %v/s", cb.low, cb.pace.Rate)
	}
	now = now.Add(10 * time.Second)
	runFor(cb, arm, now, 15*time.Second)
	now = now.Add(15 * time.Second)
	if cb.low || cb.pace.Rate != 10 || cb.reserve(now) != 4 {
		t.Errorf("25 s alone again: low %v, pace %v/s, reserve %v; want 10/s and 4", cb.low, cb.pace.Rate, cb.reserve(now))
	}
	if arm.throttled != 0 {
		t.Errorf("%d × 429", arm.throttled)
	}
}

// TestBudgetConfiguredCaps: a configured rate caps the adaptive pace, a
// configured burst the requests that leave at once.
func TestBudgetConfiguredCaps(t *testing.T) {
	cb := newClassBudget(armWrites, classConfigOf(RateLimit{WritesPerSecond: 2, WriteBurst: 5}, armWrites), true, t0)
	arm := newARMBucket(200, 10, t0)
	if n := burstAt(cb, arm, t0); n != 5 {
		t.Errorf("burst of %d, want the configured 5", n)
	}
	if n := runFor(cb, arm, t0.Add(time.Millisecond), 10*time.Second); n != 20 {
		t.Errorf("%d writes in 10 s, want 20 at the configured 2/s", n)
	}
	// A configured rate above ARM's refill is capped at 9.5/s once ARM
	// reports; before, it is the configured budget.
	if c := classConfigOf(RateLimit{ReadsPerSecond: 1000, ReadBurst: 1000}, armReads); c.adaptive(c.documented) != 25 || c.fallbackRate != 1000 {
		t.Errorf("reads: %+v", c)
	}
	if c := classConfigOf(RateLimit{WritesPerSecond: 3}, armDeletes); c.adaptive(c.documented) != 3 || c.fallbackBurst != DefaultWriteBurst || c.burstCap != 0 {
		t.Errorf("deletes: %+v", c)
	}
}

// TestBudgetCountsRequestsARMHasNotCharged: with requests in flight and
// answers out of order, ARM's reports are read as lower bounds: a random
// client with up to 8 requests in flight, ARM charging them in any order
// and answering in any order, never meets a 429 and never takes ARM below
// the reserve, and still uses ARM's refill.
func TestBudgetCountsRequestsARMHasNotCharged(t *testing.T) {
	for seed := range int64(20) {
		rnd := rand.New(rand.NewSource(seed))
		cb := newClassBudget(armWrites, classConfigOf(RateLimit{}, armWrites), true, t0)
		arm := newARMBucket(200, 10, t0)
		type req struct {
			t       ticket
			charged bool
			left    int
		}
		var flight []*req
		now, sent := t0, 0
		for now.Before(t0.Add(60 * time.Second)) {
			switch rnd.Intn(4) {
			case 0: // send, if allowed
				if len(flight) < 8 && cb.take(now) == 0 {
					flight = append(flight, &req{t: cb.send(false)})
					sent++
				}
			case 1: // ARM charges one request in flight, in any order
				if len(flight) > 0 {
					if r := flight[rnd.Intn(len(flight))]; !r.charged {
						r.charged, r.left = true, arm.charge(now)
					}
				}
			case 2: // one charged request is answered, in any order
				if len(flight) > 0 {
					i := rnd.Intn(len(flight))
					if r := flight[i]; r.charged {
						cb.observe(now, r.t, r.left, true)
						flight = append(flight[:i], flight[i+1:]...)
					}
				}
			case 3:
				now = now.Add(time.Duration(rnd.Intn(5)) * time.Millisecond)
			}
		}
		if arm.throttled != 0 || arm.minLeft < 4 {
			t.Errorf("seed %d: %d × 429, ARM down to %v tokens (reserve 4)", seed, arm.throttled, arm.minLeft)
		}
		// Requests charged and answered in any order are no other client.
		if cb.share.turns != 0 {
			t.Errorf("seed %d: %d reports taken for another client's spending", seed, cb.share.turns)
		}
		// ARM allows 200 + 10/s; the reserve and the requests counted as
		// uncharged cost some.
		if sent < 196+10*60-20 || sent > 200+10*60 {
			t.Errorf("seed %d: %d requests in 60 s", seed, sent)
		}
	}
}

// TestARMClasses: requests are charged to ARM's buckets by method, and
// each bucket's report is read from its own header.
func TestARMClasses(t *testing.T) {
	h := http.Header{}
	h.Set("x-ms-ratelimit-remaining-subscription-reads", "249")
	h.Set("x-ms-ratelimit-remaining-subscription-writes", "199")
	h.Set("x-ms-ratelimit-remaining-subscription-deletes", "bad")
	resp := &http.Response{Header: h}
	for _, c := range []struct {
		method string
		want   armClass
		left   int
		ok     bool
	}{
		{http.MethodGet, armReads, 249, true}, {http.MethodHead, armReads, 249, true},
		{http.MethodPatch, armWrites, 199, true}, {http.MethodPut, armWrites, 199, true}, {http.MethodPost, armWrites, 199, true},
		{http.MethodDelete, armDeletes, 0, false},
	} {
		cl := armClassOf(c.method)
		if left, ok := cl.remaining(resp); cl != c.want || left != c.left || ok != c.ok {
			t.Errorf("%s: class %v, remaining %d %v; want %v, %d %v", c.method, cl, left, ok, c.want, c.left, c.ok)
		}
	}
	if _, ok := armWrites.remaining(nil); ok {
		t.Error("a missing answer reported a level")
	}
}

// TestBudgetIgnoresOlderAnswers: an answer older than the one that last
// set the headroom does not raise it again.
func TestBudgetIgnoresOlderAnswers(t *testing.T) {
	cb := newClassBudget(armWrites, classConfigOf(RateLimit{}, armWrites), true, t0)
	a, b := cb.send(false), cb.send(false)
	// 100 left: a reserve of 3 (2% of 101), and a was in flight when b
	// left, so maybe not charged yet.
	cb.observe(t0, b, 100, true)
	h := cb.headroom
	cb.observe(t0, a, 199, true)
	if cb.headroom != h || h != 100-3-1 {
		t.Errorf("headroom %v after an older answer, want %v (96)", cb.headroom, h)
	}
	if cb.armMax != 199 || cb.inflight != 0 {
		t.Errorf("armMax %d, inflight %d", cb.armMax, cb.inflight)
	}
}

// responseRecorder records the writes-remaining header of every answer to
// a tag write.
type responseRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	left []int
}

func (r *responseRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodPatch {
		if n, ok := armWrites.remaining(resp); ok {
			r.mu.Lock()
			r.left = append(r.left, n)
			r.mu.Unlock()
		}
	}
	return resp, err
}

// providerBudget is the budget in p's pipeline.
func providerBudget(t *testing.T, p *Provider) *budget {
	t.Helper()
	for _, pol := range p.armOpts.PerRetryPolicies {
		if tp, ok := pol.(throttlePolicy); ok && tp.budget != nil {
			return tp.budget
		}
	}
	t.Fatal("no budget in the pipeline")
	return nil
}

// TestBudgetUsesARMQuotaWithout429: 80 tag writes to a subscription whose
// ARM write bucket holds 60 tokens refilled at 10/s, with the default
// budget: the budget spends ARM's bucket down to the reserve (2 tokens,
// alone), beyond its conservative burst of 20, without a single 429.
func TestBudgetUsesARMQuotaWithout429(t *testing.T) {
	env := startArmsim(t)
	big := armsim.Bucket{Capacity: 1000, RefillPerSecond: 1000}
	env.Server.SetThrottle(armsim.ThrottleOptions{Reads: big, Writes: armsim.Bucket{Capacity: 60, RefillPerSecond: 10}, Deletes: big, Graph: big})
	est := env.seedOwned("q1", 8)
	ids := est.ResourceIDs()
	rec := &responseRecorder{base: env.HTTPClient.Transport}
	cfg := armsimConfig(env)
	cfg.HTTPClient = &http.Client{Transport: rec}
	t.Cleanup(cfg.HTTPClient.CloseIdleConnections)
	p := newTestProvider(t, env, &cfg)
	env.Server.ResetCalls()
	res := p.WriteTags(t.Context(), []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"owner": "team-a"}}}}, nil)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.ID, r.Err)
		}
	}
	if n := env.Server.Calls().CountStatus("Tags.UpdateAtScope", http.StatusTooManyRequests); n != 0 {
		t.Errorf("%d × 429, want none", n)
	}
	if n := env.Server.Calls().CountStatus("Tags.UpdateAtScope", http.StatusOK); n != len(ids) {
		t.Errorf("%d successful writes, want %d", n, len(ids))
	}
	sent, waits := providerBudget(t, p.Provider).class(strings.ToLower(env.SubscriptionID), armWrites).stats()
	if int(sent) != len(ids) {
		t.Errorf("the budget let %d writes through, want %d", sent, len(ids))
	}
	// About ARM's 60 less the reserve of 2 go at once (some fewer:
	// requests in flight are counted as not yet charged; some more on a
	// slow run: ARM refills 10/s meanwhile and reports it); the rest wait
	// for ARM's refill. What must hold is more than the conservative burst,
	// and (below) no 429 and ARM's bucket never under the reserve.
	if free := len(ids) - int(waits); free <= DefaultWriteBurst {
		t.Errorf("%d writes left without waiting, want more than the conservative burst of %d", free, DefaultWriteBurst)
	}
	lowest := 60
	for _, n := range rec.left {
		lowest = min(lowest, n)
	}
	t.Logf("%d of %d writes left without waiting; ARM's bucket went down to %d", len(ids)-int(waits), len(ids), lowest)
	if len(rec.left) != len(ids) || lowest < 2 || lowest > 2+2*DefaultWriteConcurrency {
		t.Errorf("ARM's bucket went down to %d of 60 over %d reports: want the reserve of 2, or a little above", lowest, len(rec.left))
	}
}
