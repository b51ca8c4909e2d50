package azure

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
)

func TestThrottledRequestsAreRetriedAndCounted(t *testing.T) {
	env := armsimtest.Start(t)
	sub := env.SubscriptionID
	must[string](t)(env.Server.CreateVM(sub, "rg", armsim.VirtualMachine{Name: "vm"}))
	p := newTestProvider(t, env, nil)
	env.Server.AddFault(armsim.Fault{Operation: "VirtualMachines.List", Count: 2, Status: http.StatusTooManyRequests,
		Code: "SubscriptionRequestsThrottled", RetryAfter: 10 * time.Millisecond})
	snap, err := p.Snapshot(context.Background(), []cloud.Node{node("vm", vmProviderID(sub, "rg", "vm"), nil)}, cloud.ReadOptions{})
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
		if got := counterValue(t, p.reg, MetricRequests, l); got != want {
			t.Errorf("%s{code=%s} = %v, want %v", MetricRequests, code, got, want)
		}
	}
	if got := counterValue(t, p.reg, MetricThrottled, op); got != 2 {
		t.Errorf("%s = %v, want 2", MetricThrottled, got)
	}
	if got := counterValue(t, p.reg, MetricRequestDuration, op); got != 3 {
		t.Errorf("%s observations = %v, want 3", MetricRequestDuration, got)
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
	env := armsimtest.Start(t)
	sub := env.SubscriptionID
	must[string](t)(env.Server.CreateVM(sub, "rg", armsim.VirtualMachine{Name: "vm"}))
	big := armsim.Bucket{Capacity: 1000, RefillPerSecond: 1000}
	env.Server.SetThrottle(armsim.ThrottleOptions{Reads: armsim.Bucket{Capacity: 10, RefillPerSecond: 40}, Writes: big, Deletes: big, Graph: big})
	nodes := []cloud.Node{node("vm", vmProviderID(sub, "rg", "vm"), nil)}
	const reads = 30

	burst := func(p *testProvider) int {
		t.Helper()
		env.Server.ResetCalls()
		for range reads {
			if _, err := p.Snapshot(context.Background(), nodes, cloud.ReadOptions{Fresh: true}); err != nil {
				t.Fatal(err)
			}
		}
		c := env.Server.Calls()
		if ok := c.CountStatus("VirtualMachines.List", http.StatusOK); ok != reads {
			t.Fatalf("%d successful lists, want %d", ok, reads)
		}
		return c.CountStatus("VirtualMachines.List", http.StatusTooManyRequests)
	}

	budgeted := newTestProvider(t, env, nil, WithRateLimit(RateLimit{ReadsPerSecond: 20, ReadBurst: 5}))
	if throttled := burst(budgeted); throttled != 0 {
		t.Errorf("with the client budget the server throttled %d requests, want 0", throttled)
	}
	unbudgeted := newTestProvider(t, env, nil, WithRateLimit(RateLimit{Disabled: true}))
	if throttled := burst(unbudgeted); throttled == 0 {
		t.Error("without the client budget the server never throttled: the test proves nothing")
	}
	if got := counterValue(t, unbudgeted.reg, MetricThrottled, nil); got == 0 {
		t.Errorf("%s not counted", MetricThrottled)
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
