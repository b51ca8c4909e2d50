package armsim_test

import (
	"net/http"
	"strconv"
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
	tc, err := armresources.NewTagsClient(env.SubscriptionID, env.Credential, noRetry(env))
	if err != nil {
		t.Fatal(err)
	}
	merge := armresources.TagsPatchOperationMerge
	patch := armresources.TagsPatchResource{Operation: &merge, Properties: &armresources.Tags{Tags: ptrMap(map[string]string{"a": "b"})}}
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

// TestThrottlingRetry lets the SDK's retry policy honour retry-after-ms:
// the bucket refills fast on the real clock, so the retry succeeds.
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
}
