package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// otherSubscription is a second subscription tests create in armsim.
const otherSubscription = "00000000-0000-4000-8000-000000000002"

// sentCounter counts the ARM requests that reach the wire, by subscription
// and ARM bucket ("reads": GET and HEAD; "writes": the rest).
type sentCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// hook records one request (requests outside a subscription, e.g. token
// requests, are not counted).
func (c *sentCounter) hook(r *http.Request) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(segs) < 2 || !strings.EqualFold(segs[0], "subscriptions") {
		return
	}
	b := "writes"
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		b = "reads"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[strings.ToLower(segs[1])+"/"+b]++
}

// get returns the count of a subscription's bucket.
func (c *sentCounter) get(sub, b string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[strings.ToLower(sub)+"/"+b]
}

// countingConfig is armsimConfig with every request counted by c.
func countingConfig(t *testing.T, env *armsimEnv, c *sentCounter) *Config {
	cfg := armsimConfig(env)
	cfg.HTTPClient = env.HookedClient(c.hook)
	t.Cleanup(cfg.HTTPClient.CloseIdleConnections)
	return &cfg
}

// wantThrottledFor fails unless err is throttled with a RetryAfter in
// (want-10s, want].
func wantThrottledFor(t *testing.T, what string, err error, want time.Duration) {
	t.Helper()
	d, ok := cloud.RetryAfter(err)
	if !errors.Is(err, cloud.ErrThrottled) || !ok || d <= want-10*time.Second || d > want {
		t.Errorf("%s: err = %v (RetryAfter %v, found %t), want throttled for about %v", what, err, d, ok, want)
	}
}

// TestThrottleGateHoldsCallsUntilRetryAfter: ARM answers one bucket of one
// subscription 429 with Retry-After 100s (and would keep doing so). Two
// Providers of the process keep calling; the gate they share sends nothing
// more to that bucket, while the other bucket and the other subscription
// carry on.
func TestThrottleGateHoldsCallsUntilRetryAfter(t *testing.T) {
	const wait = 100 * time.Second
	env := startArmsim(t)
	subA, subB := env.SubscriptionID, otherSubscription
	if err := env.Server.CreateSubscription(subB, nil); err != nil {
		t.Fatal(err)
	}
	vmA := must[string](t)(env.Server.CreateVM(subA, "rg", armsim.VirtualMachine{Name: "vm-a"}))
	vmB := must[string](t)(env.Server.CreateVM(subB, "rg", armsim.VirtualMachine{Name: "vm-b"}))
	nodes := []cloud.Node{node("vm-a", vmProviderID(subA, "rg", "vm-a"), nil), node("vm-b", vmProviderID(subB, "rg", "vm-b"), nil)}
	sent := &sentCounter{n: map[string]int{}}
	cfg := countingConfig(t, env, sent)
	// Both Providers use the process-wide gates; open this server's when
	// the test ends, so that no later test on the same port meets them.
	u, _ := url.Parse(env.Server.URL())
	t.Cleanup(func() { DefaultThrottleGates().forgetHost(u.Host) })
	providers := []*testProvider{newTestProvider(t, env, cfg), newTestProvider(t, env, cfg)}
	ctx := t.Context()
	const rounds = 3

	// Writes of subscription A.
	env.Server.AddFault(armsim.Fault{Operation: "Tags.UpdateAtScope", Scope: "/subscriptions/" + subA, Status: http.StatusTooManyRequests, RetryAfter: wait})
	_, err := providers[0].PatchTags(ctx, vmA, tags.Patch{Set: tags.Set{"n": "first"}})
	wantThrottledFor(t, "the write ARM throttled", err, wait)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the throttled write does not unwrap to ARM's 429: %v", err)
	}
	if notSent(err) {
		t.Errorf("the write ARM throttled says it was not sent: %v", err)
	}
	for i := range rounds {
		for j, p := range providers {
			_, err := p.PatchTags(ctx, vmA, tags.Patch{Set: tags.Set{"n": string(rune('a' + i))}})
			wantThrottledFor(t, "a held write", err, wait)
			if errors.As(err, &re) || !notSent(err) {
				t.Errorf("provider %d: a held write carries an ARM answer, or does not say it was not sent: %v", j, err)
			}
			if _, err := p.PatchTags(ctx, vmB, tags.Patch{Set: tags.Set{"n": string(rune('a' + i))}}); err != nil {
				t.Errorf("provider %d: subscription B's write: %v", j, err)
			}
			if snap, err := p.Snapshot(ctx, nodes, cloud.ReadOptions{Fresh: true}); err != nil || len(snap.Failed) > 0 {
				t.Errorf("provider %d: reads of subscription A are another bucket, yet: %v %+v", j, err, snap.Failed)
			}
		}
	}
	if n := sent.get(subA, "writes"); n != 1 {
		t.Errorf("%d writes sent to subscription A, want only the one ARM throttled", n)
	}
	if n := sent.get(subB, "writes"); n == 0 {
		t.Error("no write sent to subscription B")
	}
	for j, p := range providers {
		// One count per call: azcore did not retry a held attempt.
		if got := counterValue(t, p.reg, cloud.MetricHeld, map[string]string{"operation": "Tags.UpdateAtScope", "bucket": "writes"}); got != rounds {
			t.Errorf("provider %d: %s{Tags.UpdateAtScope, writes} = %v, want %d", j, cloud.MetricHeld, got, rounds)
		}
	}

	// Reads of subscription A.
	env.Server.ClearFaults()
	env.Server.AddFault(armsim.Fault{Operation: "VirtualMachines.List", Scope: "/subscriptions/" + subA, Status: http.StatusTooManyRequests, RetryAfter: wait})
	readsA, readsB := sent.get(subA, "reads"), sent.get(subB, "reads")
	for i := range rounds {
		for j, p := range providers {
			snap, err := p.Snapshot(ctx, nodes, cloud.ReadOptions{Fresh: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Failed) != 1 || !strings.Contains(snap.Failed[0].Scope, subA) {
				t.Fatalf("round %d, provider %d: failed scopes %+v, want subscription A's group", i, j, snap.Failed)
			}
			wantThrottledFor(t, "the failed scope", snap.Failed[0].Err, wait)
			if pl := snap.Placements["vm-a"]; pl.Managed || pl.Err == nil {
				t.Errorf("vm-a: %+v, want a read error", pl)
			}
			if pl := snap.Placements["vm-b"]; !pl.Managed || pl.Err != nil {
				t.Errorf("vm-b: %+v, want managed", pl)
			}
			_, err = p.PatchTags(ctx, vmA, tags.Patch{Set: tags.Set{"n": "again"}})
			wantThrottledFor(t, "a write whose read is held", err, wait)
		}
	}
	if n := sent.get(subA, "reads") - readsA; n != 1 {
		t.Errorf("%d reads sent to subscription A, want only the one ARM throttled", n)
	}
	if n := sent.get(subB, "reads") - readsB; n != 2*rounds {
		t.Errorf("%d reads sent to subscription B, want %d (one list per fresh Snapshot)", n, 2*rounds)
	}
}

// TestClientBudgetIsPerSubscription: a budget of one read (refilled once in
// 1000s) spent on subscription A leaves subscription B's untouched.
func TestClientBudgetIsPerSubscription(t *testing.T) {
	env := startArmsim(t)
	subA, subB := env.SubscriptionID, otherSubscription
	if err := env.Server.CreateSubscription(subB, nil); err != nil {
		t.Fatal(err)
	}
	must[string](t)(env.Server.CreateVM(subA, "rg", armsim.VirtualMachine{Name: "vm-a"}))
	must[string](t)(env.Server.CreateVM(subB, "rg", armsim.VirtualMachine{Name: "vm-b"}))
	p := env.provider(WithRateLimit(RateLimit{ReadsPerSecond: 0.001, ReadBurst: 1}))
	// With a deadline, a token that comes later fails the wait at once.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	snapshot := func(sub, name string) cloud.Snapshot {
		t.Helper()
		snap, err := p.Snapshot(ctx, []cloud.Node{node(name, vmProviderID(sub, "rg", name), nil)}, cloud.ReadOptions{Fresh: true})
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	if snap := snapshot(subA, "vm-a"); len(snap.Failed) > 0 {
		t.Fatalf("first read of subscription A: %+v", snap.Failed)
	}
	if snap := snapshot(subB, "vm-b"); len(snap.Failed) > 0 {
		t.Errorf("subscription B waited for subscription A's budget: %+v", snap.Failed)
	}
	snap := snapshot(subA, "vm-a")
	if len(snap.Failed) != 1 || !strings.Contains(snap.Failed[0].Err.Error(), "client-side request budget") {
		t.Errorf("second read of subscription A: failed %+v, want the budget spent", snap.Failed)
	}
	if got := p.Calls()["VirtualMachines.List"]; got != 2 {
		t.Errorf("VirtualMachines.List sent %d times, want 2 (a spent budget is not retried)", got)
	}
}

// notSent reports whether err says its request was never sent.
func notSent(err error) bool {
	var t *cloud.ThrottledError
	return errors.As(err, &t) && t.NotSent()
}

// TestProviderLimitHoldsOnlyItsScope: Compute's budget of one VM refuses
// its second update; that VM's next write is held unsent while another
// VM's goes on (before, any 429 closed the subscription's writes for every
// resource). Two VMs refused by the subscription's Compute budget close
// Compute's gate in that subscription: a third VM waits unsent, a network
// resource writes. A resource another operation holds closes no gate.
func TestProviderLimitHoldsOnlyItsScope(t *testing.T) {
	env := startArmsim(t, armsimtest.WithThrottle(armsim.ThrottleOptions{
		ComputeResourceUpdates: armsim.Bucket{Capacity: 1, RefillPerSecond: 0.001},
	}))
	vms := make([]string, 5)
	for i := range vms {
		vms[i] = env.vm("rg", armsim.VirtualMachine{Name: fmt.Sprintf("vm-%d", i)})
	}
	nic := env.resource("rg", armsim.Resource{Type: armsim.TypeNetworkInterface, Name: "nic"})
	patch := func(p *testProvider, id, v string) error {
		_, err := p.PatchTags(t.Context(), id, tags.Patch{Set: tags.Set{"n": v}})
		return err
	}
	updates := func() int { return env.Server.Calls().Count("VirtualMachines.Update") }

	p := env.provider(WithWriteMethod(WriteResourcePatch), WithThrottleGates(NewThrottleGates()))
	if err := patch(p, vms[0], "1"); err != nil {
		t.Fatal(err)
	}
	err := patch(p, vms[0], "2")
	var te *cloud.ThrottledError
	if !errors.As(err, &te) || !strings.Contains(te.Scope, strings.ToLower(vms[0])) || te.RetryAfter < 100*time.Second {
		t.Fatalf("the busy VM: err = %v, want a ThrottledError naming it for its Retry-After", err)
	}
	sent := updates()
	if err := patch(p, vms[0], "3"); !errors.As(err, &te) || updates() != sent {
		t.Errorf("the busy VM's next write must wait unsent: %v (%d updates sent, %d before)", err, updates(), sent)
	}
	if err := patch(p, vms[1], "1"); err != nil {
		t.Errorf("another VM must not wait for the busy one: %v", err)
	}

	env.Server.SetThrottle(armsim.ThrottleOptions{ComputeSubscriptionUpdates: armsim.Bucket{Capacity: 1, RefillPerSecond: 0.001}})
	p = env.provider(WithWriteMethod(WriteResourcePatch), WithThrottleGates(NewThrottleGates()))
	if err := patch(p, vms[2], "1"); err != nil {
		t.Fatal(err)
	}
	for _, vm := range vms[3:] {
		if err := patch(p, vm, "1"); !errors.Is(err, cloud.ErrThrottled) {
			t.Fatalf("%s: err = %v, want throttled", vm, err)
		}
	}
	sent = updates()
	if err := patch(p, vms[1], "2"); !errors.As(err, &te) || updates() != sent || !strings.Contains(te.Scope, "microsoft.compute writes of subscription") {
		t.Errorf("a third VM must wait unsent at Compute's gate: %v (%d updates sent, %d before)", err, updates(), sent)
	}
	if err := patch(p, nic, "1"); err != nil {
		t.Errorf("a network resource must not wait for Compute: %v", err)
	}

	p = env.provider(WithThrottleGates(NewThrottleGates()))
	release := env.Server.LockResource(nic)
	defer release()
	go func() {
		// The other operation ends once the write has met it.
		_ = wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return env.Server.Calls().CountStatus("Tags.UpdateAtScope", http.StatusTooManyRequests) > 0, nil
		})
		release()
	}()
	if err := patch(p, nic, "2"); err != nil {
		t.Fatalf("the write must go through once the other operation ends: %v", err)
	}
	if p.opts.Gates.ClosedAny(func(gateKey) bool { return true }) {
		t.Error("another operation's 429 closed a gate")
	}
}

// TestWriteTagsBusyResourceHoldsOnlyItself: in one WriteTags, a resource
// another operation holds fails alone; the next resource of the same
// subscription is still written (a subscription-wide throttling stops
// the rest of the batch; this is not one).
func TestWriteTagsBusyResourceHoldsOnlyItself(t *testing.T) {
	env := startArmsim(t)
	busy := env.resource("rg", armsim.Resource{Type: armsim.TypeLoadBalancer, Name: "busy"})
	next := env.resource("rg", armsim.Resource{Type: armsim.TypeLoadBalancer, Name: "next"})
	defer env.Server.LockResource(busy)()
	p := env.provider(WithThrottleGates(NewThrottleGates()), WithWriteConcurrency(1))
	res := p.WriteTags(t.Context(), []cloud.TagWrite{{IDs: []string{busy, next}, Patch: tags.Patch{Set: tags.Set{"a": "1"}}}}, nil)
	if !errors.Is(res[0].Err, cloud.ErrThrottled) || !strings.Contains(res[0].Err.Error(), "another operation") {
		t.Errorf("the busy resource: %v", res[0].Err)
	}
	if res[1].Err != nil || env.tags(next)["a"] != "1" {
		t.Errorf("the next resource was not written: %v", res[1].Err)
	}
}
