package armsim_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v4"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

func TestThrottlingWithFakeClock(t *testing.T) {
	clock := armsim.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	env := armsimtest.Start(t, armsimtest.WithClock(clock), armsimtest.WithThrottle(armsim.ThrottleOptions{
		Reads:   armsim.Bucket{Capacity: 3, RefillPerSecond: 1},
		Writes:  armsim.Bucket{Capacity: 1, RefillPerSecond: 0.5},
		Deletes: armsim.Bucket{Capacity: 1, RefillPerSecond: 0.5},
	}))
	e := seedEstate(t, env.Server, env.SubscriptionID)
	c, err := armcompute.NewVirtualMachinesClient(env.SubscriptionID, env.Credential, noRetry(env))
	if err != nil {
		t.Fatal(err)
	}
	get := func() (*http.Response, error) {
		var resp *http.Response
		_, err := c.Get(policy.WithCaptureResponse(ctx(t), &resp), rg, "flex-0", nil)
		return resp, err
	}
	for want := 2; want >= 0; want-- {
		resp, err := get()
		if err != nil {
			t.Fatal(err)
		}
		if h := resp.Header.Get("x-ms-ratelimit-remaining-subscription-reads"); h != strconv.Itoa(want) {
			t.Errorf("remaining reads = %q, want %d", h, want)
		}
	}
	resp, err := get()
	wantARMError(t, err, http.StatusTooManyRequests, "SubscriptionRequestsThrottled")
	if resp.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q", resp.Header.Get("Retry-After"))
	}
	clock.Advance(time.Second)
	if _, err := get(); err != nil {
		t.Fatalf("after refill: %v", err)
	}
	// Writes and deletes have their own buckets.
	tc, patch := mergeNoRetry(t, env)
	if _, err := tc.BeginUpdateAtScope(policy.WithCaptureResponse(ctx(t), &resp), e.nic, patch, nil); err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("x-ms-ratelimit-remaining-subscription-writes") != "0" {
		t.Errorf("writes header = %q", resp.Header.Get("x-ms-ratelimit-remaining-subscription-writes"))
	}
	_, err = tc.BeginUpdateAtScope(ctx(t), e.nic, patch, nil)
	wantARMError(t, err, http.StatusTooManyRequests, "SubscriptionRequestsThrottled")
	if _, err := tc.BeginDeleteAtScope(policy.WithCaptureResponse(ctx(t), &resp), e.nic, nil); err != nil {
		t.Fatalf("deletes must not share the writes bucket: %v", err)
	}
	if resp.Header.Get("x-ms-ratelimit-remaining-subscription-deletes") != "0" {
		t.Errorf("deletes header = %q", resp.Header.Get("x-ms-ratelimit-remaining-subscription-deletes"))
	}
	if n := env.Server.Calls().CountStatus("Tags.UpdateAtScope", http.StatusTooManyRequests); n != 1 {
		t.Errorf("429s counted = %d", n)
	}
}

// TestThrottlingRetry lets the SDK's retry policy honour Retry-After (in
// whole seconds, as ARM sends it: no retry-after-ms): the bucket refills
// on the real clock, so the retry succeeds.
func TestThrottlingRetry(t *testing.T) {
	env := armsimtest.Start(t, armsimtest.WithThrottle(armsim.ThrottleOptions{
		Reads: armsim.Bucket{Capacity: 1, RefillPerSecond: 20},
	}))
	seedEstate(t, env.Server, env.SubscriptionID)
	c := vmClient(t, env)
	for i := 0; i < 3; i++ {
		if _, err := c.Get(ctx(t), rg, "flex-0", nil); err != nil {
			t.Fatalf("get %d: %v", i, err)
		}
	}
	calls := env.Server.Calls()
	if calls.CountStatus("VirtualMachines.Get", http.StatusOK) != 3 || calls.CountStatus("VirtualMachines.Get", http.StatusTooManyRequests) == 0 {
		t.Errorf("want 3 successes after at least one 429, got %+v", calls["VirtualMachines.Get"])
	}
	var resp *http.Response
	env.Server.SetThrottle(armsim.ThrottleOptions{Reads: armsim.Bucket{Capacity: 1, RefillPerSecond: 0.001}})
	_, _ = c.Get(ctx(t), rg, "flex-0", nil)
	_, err := vmClientNoRetry(t, env).Get(policy.WithCaptureResponse(ctx(t), &resp), rg, "flex-0", nil)
	wantARMError(t, err, http.StatusTooManyRequests, "SubscriptionRequestsThrottled")
	if got := resp.Header.Get("Retry-After"); got != "1000" || resp.Header.Get("retry-after-ms") != "" {
		t.Errorf("Retry-After = %q, retry-after-ms = %q; want 1000 and none", got, resp.Header.Get("retry-after-ms"))
	}
}

func vmClientNoRetry(t testing.TB, env *armsimtest.Env) *armcompute.VirtualMachinesClient {
	t.Helper()
	c, err := armcompute.NewVirtualMachinesClient(env.SubscriptionID, env.Credential, noRetry(env))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestComputeThrottling: Compute's per-resource update budget refuses the
// 13th update of one VM with its own 429 (OperationNotAllowed, the policy
// named in the details and at 0 in x-ms-ratelimit-remaining-resource) while
// other VMs of the subscription update; the subscription's Compute budget
// refuses every VM once spent, and gives back the VM's token.
func TestComputeThrottling(t *testing.T) {
	clock := armsim.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	env := armsimtest.Start(t, armsimtest.WithClock(clock))
	seedEstate(t, env.Server, env.SubscriptionID)
	c := vmClientNoRetry(t, env)
	update := func(name string) (*http.Response, error) {
		var resp *http.Response
		_, err := c.BeginUpdate(policy.WithCaptureResponse(ctx(t), &resp), rg, name,
			armcompute.VirtualMachineUpdate{Tags: ptrMap(map[string]string{"n": name})}, nil)
		return resp, err
	}
	for i := 11; i >= 0; i-- {
		resp, err := update("flex-0")
		if err != nil {
			t.Fatalf("update %d: %v", 12-i, err)
		}
		if want := armsim.PolicyComputeResourceUpdates + ";" + strconv.Itoa(i); !contains(resp.Header.Values("x-ms-ratelimit-remaining-resource"), want) {
			t.Fatalf("remaining = %q, want %q", resp.Header.Values("x-ms-ratelimit-remaining-resource"), want)
		}
	}
	resp, err := update("flex-0")
	re := wantARMError(t, err, http.StatusTooManyRequests, "OperationNotAllowed")
	if !strings.Contains(re.Error(), "UpdateVMResource") || resp.Header.Get("Retry-After") != "15" {
		t.Errorf("want the policy in the details and Retry-After 15 (4 tokens a minute), got %q: %v", resp.Header.Get("Retry-After"), re)
	}
	if !contains(resp.Header.Values("x-ms-ratelimit-remaining-resource"), armsim.PolicyComputeResourceUpdates+";0") {
		t.Errorf("the exhausted policy is not reported: %q", resp.Header.Values("x-ms-ratelimit-remaining-resource"))
	}
	if _, err := update("standalone-vm"); err != nil {
		t.Fatalf("another VM must not wait for a busy one: %v", err)
	}
	clock.Advance(15 * time.Second)
	if _, err := update("flex-0"); err != nil {
		t.Fatalf("after a token came back: %v", err)
	}

	env.Server.SetThrottle(armsim.ThrottleOptions{ComputeSubscriptionUpdates: armsim.Bucket{Capacity: 1, RefillPerSecond: 0.1}})
	if _, err := update("as-vm"); err != nil {
		t.Fatal(err)
	}
	for _, vm := range []string{"as-vm", "flex-1"} {
		resp, err := update(vm)
		wantARMError(t, err, http.StatusTooManyRequests, "OperationNotAllowed")
		if !contains(resp.Header.Values("x-ms-ratelimit-remaining-resource"), armsim.PolicyComputeSubscriptionUpdates+";0") {
			t.Errorf("%s: the subscription's policy is not reported: %q", vm, resp.Header.Values("x-ms-ratelimit-remaining-resource"))
		}
	}
	clock.Advance(10 * time.Second)
	resp, err = update("as-vm")
	if err != nil {
		t.Fatal(err)
	}
	// 12 - 1 (the first update): the refused ones gave their token back.
	if want := armsim.PolicyComputeResourceUpdates + ";10"; !contains(resp.Header.Values("x-ms-ratelimit-remaining-resource"), want) {
		t.Errorf("remaining = %q, want %q", resp.Header.Values("x-ms-ratelimit-remaining-resource"), want)
	}
}

// TestComputeReadThrottling: Compute's read policies ("Compute throttling
// limits"): a VM's 37th Get within a minute is refused by Low Cost Get VM's
// per-VM bucket (36, 12 a minute) while another VM's Get is served; the
// subscription's 1,081st scale-set List is refused by High Cost Get VMSS
// (1,080, subscription only). ARM's own read bucket is raised so that
// Compute's policies are what refuses.
func TestComputeReadThrottling(t *testing.T) {
	clock := armsim.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	env := armsimtest.Start(t, armsimtest.WithClock(clock))
	env.Server.SetThrottle(armsim.ThrottleOptions{Reads: armsim.Bucket{Capacity: 5000, RefillPerSecond: 1000}})
	seedEstate(t, env.Server, env.SubscriptionID)
	vms := vmClientNoRetry(t, env)
	get := func(name string) (*http.Response, error) {
		var resp *http.Response
		_, err := vms.Get(policy.WithCaptureResponse(ctx(t), &resp), rg, name, nil)
		return resp, err
	}
	for i := 35; i >= 0; i-- {
		resp, err := get("flex-0")
		if err != nil {
			t.Fatalf("Get %d: %v", 36-i, err)
		}
		if want := "Microsoft.Compute/LowCostGetVMResource;" + strconv.Itoa(i); !contains(resp.Header.Values("x-ms-ratelimit-remaining-resource"), want) {
			t.Fatalf("remaining = %q, want %q", resp.Header.Values("x-ms-ratelimit-remaining-resource"), want)
		}
	}
	resp, err := get("flex-0")
	re := wantARMError(t, err, http.StatusTooManyRequests, "OperationNotAllowed")
	if !strings.Contains(re.Error(), "LowCostGetVMResource") || resp.Header.Get("Retry-After") != "5" {
		t.Errorf("want Low Cost Get VM in the details and Retry-After 5 (12 tokens a minute), got %q: %v", resp.Header.Get("Retry-After"), re)
	}
	if _, err := get("standalone-vm"); err != nil {
		t.Fatalf("another VM's Get must not wait for a busy one: %v", err)
	}

	sets, err := armcompute.NewVirtualMachineScaleSetsClient(env.SubscriptionID, env.Credential, noRetry(env))
	if err != nil {
		t.Fatal(err)
	}
	list := func() error {
		_, err := sets.NewListPager(rg, nil).NextPage(ctx(t))
		return err
	}
	for i := range 1080 {
		if err := list(); err != nil {
			t.Fatalf("List %d: %v", i+1, err)
		}
	}
	re = wantARMError(t, list(), http.StatusTooManyRequests, "OperationNotAllowed")
	if !strings.Contains(re.Error(), "HighCostGetVMScaleSetSubscription") {
		t.Errorf("want High Cost Get VMSS in the details: %v", re)
	}
	clock.Advance(time.Second)
	if err := list(); err != nil {
		t.Fatalf("after 6 tokens came back (360 a minute): %v", err)
	}
}

// TestLockContention: a write of a resource another operation holds is
// answered 429 RetryableErrorDueToAnotherOperation (not throttling: the
// subscription's bucket is not the cause and other resources write), until
// the operation ends.
func TestLockContention(t *testing.T) {
	env := armsimtest.Start(t)
	e := seedEstate(t, env.Server, env.SubscriptionID)
	tc, patch := mergeNoRetry(t, env)
	release := env.Server.LockResource(e.lb)
	var resp *http.Response
	_, err := tc.BeginUpdateAtScope(policy.WithCaptureResponse(ctx(t), &resp), e.lb, patch, nil)
	wantARMError(t, err, http.StatusTooManyRequests, armsim.CodeAnotherOperation)
	if resp.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q", resp.Header.Get("Retry-After"))
	}
	if _, err := tc.GetAtScope(ctx(t), e.lb, nil); err != nil {
		t.Errorf("reads go on: %v", err)
	}
	if _, err := tc.BeginUpdateAtScope(ctx(t), e.nic, patch, nil); err != nil {
		t.Errorf("another resource writes: %v", err)
	}
	release()
	release()
	if _, err := tc.BeginUpdateAtScope(ctx(t), e.lb, patch, nil); err != nil {
		t.Errorf("after the operation: %v", err)
	}
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// TestNetworkThrottling: Network's write budget of a subscription counts
// Tags API writes at its resources' scopes: once spent, the next write of
// any of its resources is refused with 429 and the policy reported at 0,
// while its reads and other providers' resources go on.
func TestNetworkThrottling(t *testing.T) {
	env := armsimtest.Start(t, armsimtest.WithThrottle(armsim.ThrottleOptions{NetworkWrites: armsim.Bucket{Capacity: 2, RefillPerSecond: 0.01}}))
	e := seedEstate(t, env.Server, env.SubscriptionID)
	tc, patch := mergeNoRetry(t, env)
	var resp *http.Response
	for i, id := range []string{e.nic, e.lb} {
		if _, err := tc.BeginUpdateAtScope(policy.WithCaptureResponse(ctx(t), &resp), id, patch, nil); err != nil {
			t.Fatal(err)
		}
		if want := armsim.PolicyNetworkWrites + ";" + strconv.Itoa(1-i); !contains(resp.Header.Values("x-ms-ratelimit-remaining-resource"), want) {
			t.Errorf("remaining %q, want %q", resp.Header.Values("x-ms-ratelimit-remaining-resource"), want)
		}
	}
	_, err := tc.BeginUpdateAtScope(policy.WithCaptureResponse(ctx(t), &resp), e.pip, patch, nil)
	wantARMError(t, err, http.StatusTooManyRequests, "TooManyRequests")
	if !contains(resp.Header.Values("x-ms-ratelimit-remaining-resource"), armsim.PolicyNetworkWrites+";0") || resp.Header.Get("Retry-After") != "100" {
		t.Errorf("headers %v", resp.Header)
	}
	if _, err := tc.GetAtScope(ctx(t), e.pip, nil); err != nil {
		t.Errorf("a read of a Network resource: %v", err)
	}
	if _, err := tc.BeginUpdateAtScope(ctx(t), e.disk, patch, nil); err != nil {
		t.Errorf("a Compute resource's write: %v", err)
	}
}

// TestPrivateDNSReadThrottling: reads of a private DNS zone (the Tags API
// at its scope) spend Azure Private DNS's own budget besides Network's: the
// third read within the budget of 2 is refused naming it, a NIC's read goes
// on.
func TestPrivateDNSReadThrottling(t *testing.T) {
	env := armsimtest.Start(t, armsimtest.WithThrottle(armsim.ThrottleOptions{PrivateDNSReads: armsim.Bucket{Capacity: 2, RefillPerSecond: 0.01}}))
	e := seedEstate(t, env.Server, env.SubscriptionID)
	zone, err := env.Server.CreateResource(env.SubscriptionID, rg, armsim.Resource{Type: armsim.TypePrivateDNSZone, Name: "privatelink.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	tc, _ := mergeNoRetry(t, env)
	var resp *http.Response
	for i := range 2 {
		if _, err := tc.GetAtScope(policy.WithCaptureResponse(ctx(t), &resp), zone, nil); err != nil {
			t.Fatal(err)
		}
		if want := armsim.PolicyPrivateDNSReads + ";" + strconv.Itoa(1-i); !contains(resp.Header.Values("x-ms-ratelimit-remaining-resource"), want) {
			t.Errorf("remaining %q, want %q", resp.Header.Values("x-ms-ratelimit-remaining-resource"), want)
		}
	}
	_, err = tc.GetAtScope(policy.WithCaptureResponse(ctx(t), &resp), zone, nil)
	re := wantARMError(t, err, http.StatusTooManyRequests, "TooManyRequests")
	if !strings.Contains(re.Error(), armsim.PolicyPrivateDNSReads) || resp.Header.Get("Retry-After") != "100" {
		t.Errorf("want the private DNS policy named and Retry-After 100, got %q: %v", resp.Header.Get("Retry-After"), re)
	}
	if _, err := tc.GetAtScope(ctx(t), e.nic, nil); err != nil {
		t.Errorf("a NIC's read: %v", err)
	}
}

// mergeNoRetry is a Tags client that does not retry, and a Merge of a=b.
func mergeNoRetry(t *testing.T, env *armsimtest.Env) (*armresources.TagsClient, armresources.TagsPatchResource) {
	t.Helper()
	tc, err := armresources.NewTagsClient(env.SubscriptionID, env.Credential, noRetry(env))
	if err != nil {
		t.Fatal(err)
	}
	merge := armresources.TagsPatchOperationMerge
	return tc, armresources.TagsPatchResource{Operation: &merge, Properties: &armresources.Tags{Tags: ptrMap(map[string]string{"a": "b"})}}
}
