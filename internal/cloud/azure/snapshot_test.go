package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// estate seeds the placement scenario and returns resource IDs by name.
func estate(env *armsimEnv) map[string]string {
	env.t.Helper()
	return map[string]string{
		"pool1":  env.scaleSet("rg-aks", armsim.ScaleSet{Name: "pool1", Tags: map[string]string{"env": "prod"}, Instances: []string{"0", "1"}}),
		"flex":   env.scaleSet("rg-aks", armsim.ScaleSet{Name: "flex", Mode: armsim.Flexible, Tags: map[string]string{"pool": "flex"}}),
		"flex-0": env.vm("rg-aks", armsim.VirtualMachine{Name: "flex-0", ScaleSet: "flex", Tags: map[string]string{"own": "vm"}}),
		"as-vm":  env.vm("rg-aks", armsim.VirtualMachine{Name: "as-vm", AvailabilitySet: "as1", Tags: map[string]string{"kind": "as"}}),
		"solo":   env.vm("rg-aks", armsim.VirtualMachine{Name: "solo"}),
		"cross":  env.vm("rg-other", armsim.VirtualMachine{Name: "cross", Tags: map[string]string{"rg": "other"}}),
		"byname": env.vm("rg-other", armsim.VirtualMachine{Name: "byname-vm", ComputerName: "byname-node"}),
	}
}

// placementNodes are the nodes of the placement scenario.
func placementNodes(sub string) []cloud.Node {
	return []cloud.Node{
		// Resource group spelled differently than the cloud's: IDs compare case-insensitively.
		node("uniform-0", instanceProviderID(sub, "RG-AKS", "pool1", "0"), nil),
		node("uniform-1", instanceProviderID(sub, "rg-aks", "POOL1", "1"), nil),
		node("flex-0", vmProviderID(sub, "rg-aks", "flex-0"), nil),
		node("as-vm", vmProviderID(sub, "rg-aks", "as-vm"), nil),
		node("solo", vmProviderID(sub, "rg-aks", "solo"), nil),
		node("cross", vmProviderID(sub, "rg-other", "cross"), map[string]string{LabelResourceGroup: "rg-other"}),
		node("byname-node", "", map[string]string{LabelResourceGroup: "rg-other"}),
		node("onprem", vmProviderID(sub, "rg-aks", "solo"), map[string]string{LabelManaged: "false"}),
		node("azure-name", "azure://azure-name", nil),
		node("foreign", "aws:///us-east-1a/i-0123456789", nil),
		node("noid", "", nil),
		node("missing-vm", vmProviderID(sub, "rg-aks", "ghost"), nil),
		node("missing-vmss", instanceProviderID(sub, "rg-aks", "ghost-vmss", "0"), nil),
		node("missing-rg", vmProviderID(sub, "rg-nowhere", "vm"), nil),
	}
}

func TestSnapshotPlacements(t *testing.T) {
	env := startArmsim(t)
	sub := env.SubscriptionID
	ids := estate(env)
	nodes := placementNodes(sub)

	type want struct {
		resource string // "" = unmanaged
		shared   bool
		reason   string // substring of Reason
		note     bool
	}
	cases := map[cloud.Target]map[string]want{
		cloud.TargetScaleSet: {
			"uniform-0":    {resource: ids["pool1"], shared: true},
			"uniform-1":    {resource: ids["pool1"], shared: true},
			"flex-0":       {resource: ids["flex"], shared: true},
			"as-vm":        {resource: ids["as-vm"]},
			"solo":         {resource: ids["solo"]},
			"cross":        {resource: ids["cross"]},
			"byname-node":  {resource: ids["byname"]},
			"onprem":       {reason: "on-prem node"},
			"azure-name":   {reason: "names no Azure VM"},
			"foreign":      {reason: "not an Azure providerID"},
			"noid":         {reason: "no providerID"},
			"missing-vm":   {reason: `VM "ghost" not found in resource group "rg-aks"`},
			"missing-vmss": {reason: `scale set "ghost-vmss" not found in resource group "rg-aks"`},
			"missing-rg":   {reason: `VM "vm" not found in resource group "rg-nowhere"`},
		},
		cloud.TargetInstance: {
			"uniform-0": {resource: ids["pool1"], shared: true, note: true},
			"flex-0":    {resource: ids["flex-0"]},
			"as-vm":     {resource: ids["as-vm"]},
			"solo":      {resource: ids["solo"]},
		},
	}
	for target, wants := range cases {
		t.Run(string(target), func(t *testing.T) {
			p := newTestProvider(t, env, nil)
			env.Server.ResetCalls()
			snap, err := p.Snapshot(t.Context(), nodes, cloud.ReadOptions{Target: target})
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range wants {
				pl := snap.Placements[name]
				switch {
				case w.resource == "" && (pl.Managed || !strings.Contains(pl.Reason, w.reason)):
					t.Errorf("%s: placement %+v, want unmanaged with reason containing %q", name, pl, w.reason)
				case w.resource != "" && (!pl.Managed || pl.Resource != w.resource || pl.Shared != w.shared):
					t.Errorf("%s: placement %+v, want resource %s shared=%t", name, pl, w.resource, w.shared)
				case (pl.Note != "") != w.note:
					t.Errorf("%s: note %q, want note=%t", name, pl.Note, w.note)
				}
				if w.resource != "" {
					r, ok := snap.Resources[cloud.CanonicalID(w.resource)]
					if !ok || r.ID != w.resource || !strings.Contains(pl.Scope, "resource group ") {
						t.Errorf("%s: resource %+v missing or incomplete in snapshot", name, r)
					}
				}
			}
			// Tags come with the listing.
			if got := snap.Resources[cloud.CanonicalID(ids["pool1"])].Tags; !got.Equal(tags.CaseInsensitive, tags.Set{"env": "prod"}) {
				t.Errorf("pool1 tags = %v", got)
			}
			// One list per (group, kind) needed: rg-aks VMSS + VM, rg-other VM, rg-nowhere VM.
			got := armCalls(env.Server, readOps...)
			wantCalls := map[string]int{"VirtualMachineScaleSets.List": 1, "VirtualMachines.List": 3}
			if fmt.Sprint(got) != fmt.Sprint(wantCalls) {
				t.Errorf("ARM reads = %v, want %v", got, wantCalls)
			}
		})
	}
}

func TestSnapshotResourceGroupFilter(t *testing.T) {
	env := startArmsim(t)
	ids := estate(env)
	p := env.provider()
	env.Server.ResetCalls()
	snap, err := p.Snapshot(t.Context(), placementNodes(env.SubscriptionID), cloud.ReadOptions{Scopes: []string{"RG-AKS"}})
	if err != nil {
		t.Fatal(err)
	}
	if pl := snap.Placements["solo"]; !pl.Managed || pl.Resource != ids["solo"] {
		t.Errorf("solo: %+v", pl)
	}
	for _, n := range []string{"cross", "byname-node", "missing-rg"} {
		if pl := snap.Placements[n]; pl.Managed || !strings.Contains(pl.Reason, "not one of the synced resource groups") {
			t.Errorf("%s: %+v, want filtered", n, pl)
		}
	}
	// rg-other and rg-nowhere are never read.
	if got := armCalls(env.Server, readOps...); got["VirtualMachines.List"] != 1 || got["VirtualMachineScaleSets.List"] != 1 {
		t.Errorf("ARM reads = %v, want one VM and one VMSS list", got)
	}
}

func TestSnapshotFlexibleScaleSetInOtherGroup(t *testing.T) {
	env := startArmsim(t)
	sub := env.SubscriptionID
	ss := env.scaleSet("rg-sets", armsim.ScaleSet{Name: "flex", Mode: armsim.Flexible, Tags: map[string]string{"a": "1"}})
	vm, err := env.Server.CreateVM(sub, "rg-vms", armsim.VirtualMachine{Name: "member", ScaleSet: ss})
	if err != nil {
		t.Fatalf("seeding a Flexible member in another resource group: %v", err)
	}
	p := env.provider()
	snap, err := p.Snapshot(t.Context(), []cloud.Node{node("member", vmProviderID(sub, "rg-vms", "member"), nil)}, cloud.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pl := snap.Placements["member"]
	if !pl.Managed || pl.Resource != ss || !pl.Shared || !strings.Contains(pl.Scope, "resource group rg-vms ") {
		t.Fatalf("placement %+v, want scale set %s (vm %s)", pl, ss, vm)
	}
	if got := snap.Resources[cloud.CanonicalID(ss)].Tags; got["a"] != "1" {
		t.Errorf("tags %v", got)
	}
}

// TestSnapshotFlexibleScaleSetUnreadable: a Flexible member whose VM was
// read but whose scale set's group could not be carries that group's error.
func TestSnapshotFlexibleScaleSetUnreadable(t *testing.T) {
	env := startArmsim(t)
	sub := env.SubscriptionID
	ss := env.scaleSet("rg-sets", armsim.ScaleSet{Name: "flex", Mode: armsim.Flexible})
	env.vm("rg-vms", armsim.VirtualMachine{Name: "member", ScaleSet: ss})
	env.Server.AddFault(armsim.Fault{Status: http.StatusForbidden, Scope: "/subscriptions/" + sub + "/resourceGroups/rg-sets"})
	p := env.provider()
	snap, err := p.Snapshot(t.Context(), []cloud.Node{node("member", vmProviderID(sub, "rg-vms", "member"), nil)}, cloud.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pl := snap.Placements["member"]
	if pl.Managed || !errors.Is(pl.Err, cloud.ErrForbidden) || !containsAll(pl.Reason, `scale sets of resource group "rg-sets"`, "403") {
		t.Errorf("placement %+v, want rg-sets' read error", pl)
	}
	if len(snap.Failed) != 1 || !strings.Contains(snap.Failed[0].Scope, "rg-sets") {
		t.Errorf("failed scopes %+v", snap.Failed)
	}
}

// bulkEstate seeds 20 Uniform nodes in 2 scale sets and 5 VMs in one group.
func bulkEstate(t *testing.T, env *armsimEnv) []cloud.Node {
	t.Helper()
	sub := env.SubscriptionID
	var nodes []cloud.Node
	for _, ss := range []string{"pool-a", "pool-b"} {
		var inst []string
		for i := range 10 {
			inst = append(inst, fmt.Sprint(i))
			nodes = append(nodes, node(fmt.Sprintf("%s-%d", ss, i), instanceProviderID(sub, "rg", ss, fmt.Sprint(i)), nil))
		}
		env.scaleSet("rg", armsim.ScaleSet{Name: ss, Instances: inst, Tags: map[string]string{"pool": ss}})
	}
	for i := range 5 {
		name := fmt.Sprintf("vm-%d", i)
		env.vm("rg", armsim.VirtualMachine{Name: name})
		nodes = append(nodes, node(name, vmProviderID(sub, "rg", name), nil))
	}
	return nodes
}

func TestSnapshotBulkReadsAndCache(t *testing.T) {
	env := startArmsim(t)
	nodes := bulkEstate(t, env)
	p := env.provider()
	now := time.Unix(1_000_000, 0)
	p.now = func() time.Time { return now }
	ctx := t.Context()

	snapshot := func(opts cloud.ReadOptions) map[string]int {
		t.Helper()
		env.Server.ResetCalls()
		snap, err := p.Snapshot(ctx, nodes, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if !snap.Placements[n.Name].Managed {
				t.Fatalf("%s unmanaged: %+v", n.Name, snap.Placements[n.Name])
			}
		}
		if len(snap.Resources) != 7 {
			t.Fatalf("%d resources, want 7", len(snap.Resources))
		}
		return armCalls(env.Server, append(readOps, writeOps...)...)
	}
	two := map[string]int{"VirtualMachineScaleSets.List": 1, "VirtualMachines.List": 1}
	if got := snapshot(cloud.ReadOptions{}); fmt.Sprint(got) != fmt.Sprint(two) {
		t.Errorf("first snapshot: ARM calls %v, want %v", got, two)
	}
	if got := snapshot(cloud.ReadOptions{}); len(got) != 0 {
		t.Errorf("second snapshot within the TTL: ARM calls %v, want none", got)
	}
	if got := snapshot(cloud.ReadOptions{Fresh: true}); fmt.Sprint(got) != fmt.Sprint(two) {
		t.Errorf("fresh snapshot: ARM calls %v, want %v", got, two)
	}
	now = now.Add(DefaultCacheTTL)
	if got := snapshot(cloud.ReadOptions{}); fmt.Sprint(got) != fmt.Sprint(two) {
		t.Errorf("snapshot after the TTL: ARM calls %v, want %v", got, two)
	}
	if got := p.Calls(); got["VirtualMachineScaleSets.List"] != 3 || got["VirtualMachines.List"] != 3 {
		t.Errorf("Provider.Calls = %v", got)
	}
}

func TestSnapshotPaging(t *testing.T) {
	env := startArmsim(t, armsimtest.WithPageSize(2))
	sub := env.SubscriptionID
	var nodes []cloud.Node
	for i := range 5 {
		ss := fmt.Sprintf("pool-%d", i)
		env.scaleSet("rg", armsim.ScaleSet{Name: ss, Instances: []string{"0"}, Tags: map[string]string{"i": fmt.Sprint(i)}})
		nodes = append(nodes, node(ss+"-0", instanceProviderID(sub, "rg", ss, "0"), nil))
	}
	for i := range 7 {
		name := fmt.Sprintf("vm-%d", i)
		env.vm("rg", armsim.VirtualMachine{Name: name, Tags: map[string]string{"i": fmt.Sprint(i)}})
		nodes = append(nodes, node(name, vmProviderID(sub, "rg", name), nil))
	}
	p := env.provider()
	env.Server.ResetCalls()
	snap, err := p.Snapshot(t.Context(), nodes, cloud.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if pl := snap.Placements[n.Name]; !pl.Managed {
			t.Errorf("%s: %+v", n.Name, pl)
		}
	}
	if len(snap.Resources) != 12 {
		t.Errorf("%d resources, want 12", len(snap.Resources))
	}
	want := map[string]int{"VirtualMachineScaleSets.List": 3, "VirtualMachines.List": 4} // pages of 2
	if got := armCalls(env.Server, readOps...); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ARM reads = %v, want %v", got, want)
	}
}

func TestSnapshotConcurrentCallersShareOneList(t *testing.T) {
	env := startArmsim(t)
	nodes := bulkEstate(t, env)
	p := env.provider()
	env.Server.SetLatency(20 * time.Millisecond) // keep the first list in flight
	env.Server.ResetCalls()
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := p.Snapshot(t.Context(), nodes, cloud.ReadOptions{})
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Latecomers may start after the first listing landed in the cache; all
	// others join the one in flight.
	if got := armCalls(env.Server, readOps...); got["VirtualMachines.List"] != 1 || got["VirtualMachineScaleSets.List"] != 1 {
		t.Errorf("ARM reads = %v, want one list of each", got)
	}
}

// TestSnapshotReadErrors: a listing that fails after the retries fails
// only its nodes, and the failure is not cached.
func TestSnapshotReadErrors(t *testing.T) {
	env := startArmsim(t)
	nodes := bulkEstate(t, env)
	p := env.provider()
	env.Server.FailNext("VirtualMachines.List", 10, http.StatusInternalServerError)
	snap, err := p.Snapshot(t.Context(), nodes, cloud.ReadOptions{})
	if err != nil {
		t.Fatalf("Snapshot failed as a whole: %v", err)
	}
	if got := p.Calls()["VirtualMachines.List"]; got != 4 {
		t.Errorf("VirtualMachines.List attempts = %d, want 4 (1 + 3 retries)", got)
	}
	if len(snap.Failed) != 1 || snap.Failed[0].Scope != "resource group rg in subscription "+env.SubscriptionID ||
		!containsAll(snap.Failed[0].Err.Error(), "list virtual machines in resource group rg", "500") {
		t.Fatalf("failed scopes %+v, want the VM list of rg", snap.Failed)
	}
	for _, n := range nodes {
		pl := snap.Placements[n.Name]
		if strings.HasPrefix(n.Name, "vm-") {
			if pl.Managed || pl.Err != snap.Failed[0].Err || !containsAll(pl.Reason, `virtual machines of resource group "rg"`, "not synced in this pass", "500") {
				t.Errorf("%s: %+v, want the list error", n.Name, pl)
			}
			continue
		}
		if !pl.Managed || pl.Err != nil {
			t.Errorf("%s: %+v, want managed (its scale set's list succeeded)", n.Name, pl)
		}
	}
	if len(snap.Resources) != 2 {
		t.Errorf("%d resources, want the 2 scale sets", len(snap.Resources))
	}
	// Not cached: the next Snapshot lists again, and is complete.
	env.Server.ClearFaults()
	snap, err = p.Snapshot(t.Context(), nodes, cloud.ReadOptions{})
	if err != nil || len(snap.Failed) != 0 || len(snap.Resources) != 7 {
		t.Errorf("second snapshot: err %v, failed %+v, %d resources", err, snap.Failed, len(snap.Resources))
	}
}

// TestSnapshotOneUnreadableGroup: of the resource groups a Snapshot reads,
// one cannot be read (forbidden, throttled beyond the retries, failing);
// it is reported with its nodes, and the others are complete.
func TestSnapshotOneUnreadableGroup(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault armsim.Fault
		kind  error // nil: none of the cloud kinds
	}{
		{"forbidden", armsim.Fault{Status: http.StatusForbidden, Code: "AuthorizationFailed",
			Message: "The client does not have authorization to perform action 'Microsoft.Compute/virtualMachines/read'."}, cloud.ErrForbidden},
		{"throttled", armsim.Fault{Status: http.StatusTooManyRequests, RetryAfter: 100 * time.Second}, cloud.ErrThrottled},
		{"server error", armsim.Fault{Status: http.StatusInternalServerError}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := startArmsim(t)
			subA, subB := env.SubscriptionID, otherSubscription
			if err := env.Server.CreateSubscription(subB, nil); err != nil {
				t.Fatal(err)
			}
			// rg-bad and rg-good in subscription A, rg-other in B; each
			// with a Uniform scale set and a VM.
			ids := map[string]string{}
			var nodes []cloud.Node
			for _, g := range []struct{ sub, rg string }{{subA, "rg-bad"}, {subA, "rg-good"}, {subB, "rg-other"}} {
				ss, vm := g.rg+"-pool", g.rg+"-vm"
				ids[ss] = must[string](t)(env.Server.CreateScaleSet(g.sub, g.rg, armsim.ScaleSet{Name: ss, Instances: []string{"0"}, Tags: map[string]string{"rg": g.rg}}))
				ids[vm] = must[string](t)(env.Server.CreateVM(g.sub, g.rg, armsim.VirtualMachine{Name: vm, Tags: map[string]string{"rg": g.rg}}))
				nodes = append(nodes, node(ss+"-0", instanceProviderID(g.sub, g.rg, ss, "0"), nil), node(vm, vmProviderID(g.sub, g.rg, vm), nil))
			}
			f := c.fault
			f.Scope = "/subscriptions/" + subA + "/resourceGroups/rg-bad"
			env.Server.AddFault(f)
			p := env.provider(WithThrottleGates(NewThrottleGates()))
			snap, err := p.Snapshot(t.Context(), nodes, cloud.ReadOptions{})
			if err != nil {
				t.Fatalf("Snapshot failed as a whole: %v", err)
			}
			if len(snap.Failed) == 0 || snap.Failed[0].Scope != "resource group rg-bad in subscription "+subA {
				t.Fatalf("failed scopes %+v, want rg-bad first", snap.Failed)
			}
			bad := snap.Failed[0].Err
			for _, k := range []error{cloud.ErrThrottled, cloud.ErrForbidden, cloud.ErrNotFound, cloud.ErrTooManyTags} {
				if errors.Is(bad, k) != (k == c.kind) {
					t.Errorf("errors.Is(%v, %q) = %t", bad, k, !(k == c.kind))
				}
			}
			if !containsAll(bad.Error(), "list virtual machines in resource group rg-bad", "list scale sets in resource group rg-bad") {
				t.Errorf("rg-bad's error %q does not name both lists", bad)
			}
			for _, n := range []string{"rg-bad-pool-0", "rg-bad-vm"} {
				pl := snap.Placements[n]
				if pl.Managed || !errors.Is(bad, pl.Err) ||
					!containsAll(pl.Reason, `of resource group "rg-bad"`, subA, "could not be read") {
					t.Errorf("%s: %+v, want rg-bad's read error", n, pl)
				}
			}
			complete := []string{"rg-good", "rg-other"}
			if c.kind == cloud.ErrThrottled {
				// ARM throttles a subscription, not a group: rg-good shares
				// rg-bad's read gate, and is complete only if read first.
				complete = []string{"rg-other"}
				if len(snap.Failed) > 1 && !errors.Is(snap.Failed[1].Err, cloud.ErrThrottled) {
					t.Errorf("rg-good failed otherwise: %+v", snap.Failed[1])
				}
			} else if len(snap.Failed) != 1 {
				t.Errorf("failed scopes %+v, want only rg-bad", snap.Failed)
			}
			for _, g := range complete {
				for _, n := range []string{g + "-pool-0", g + "-vm"} {
					pl := snap.Placements[n]
					id := ids[strings.TrimSuffix(n, "-0")]
					if !pl.Managed || pl.Err != nil || pl.Resource != id || snap.Resources[cloud.CanonicalID(id)].Tags["rg"] != g {
						t.Errorf("%s: %+v, resource %+v, want complete", n, pl, snap.Resources[cloud.CanonicalID(id)])
					}
				}
			}
		})
	}
}

// TestSnapshotContextEnded: a Snapshot whose context ends fails as a whole.
func TestSnapshotContextEnded(t *testing.T) {
	env := startArmsim(t)
	nodes := bulkEstate(t, env)
	p := env.provider()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := p.Snapshot(ctx, nodes, cloud.ReadOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// A targeted read GETs each resource the nodes name once, fresh, and
// places the nodes as a full read does.
func TestTargetedSnapshotReadsEachResourceOnce(t *testing.T) {
	env := startArmsim(t)
	sub := env.SubscriptionID
	ids := estate(env)
	all := placementNodes(sub)
	pick := func(names ...string) []cloud.Node {
		var out []cloud.Node
		for _, n := range all {
			for _, name := range names {
				if n.Name == name {
					out = append(out, n)
				}
			}
		}
		return out
	}
	for _, c := range []struct {
		name      string
		nodes     []cloud.Node
		resources []string
		want      map[string]string // node → resource
		calls     map[string]int
	}{
		{"a Uniform scale set", pick("uniform-0", "uniform-1"), []string{ids["pool1"]},
			map[string]string{"uniform-0": ids["pool1"], "uniform-1": ids["pool1"]},
			map[string]int{"VirtualMachineScaleSets.Get": 1}},
		{"a standalone VM", pick("solo"), []string{ids["solo"]},
			map[string]string{"solo": ids["solo"]}, map[string]int{"VirtualMachines.Get": 1}},
		{"a Flexible scale set: its VM, then the scale set", pick("flex-0"), []string{ids["flex"]},
			map[string]string{"flex-0": ids["flex"]}, map[string]int{"VirtualMachines.Get": 1, "VirtualMachineScaleSets.Get": 1}},
		{"a node without providerID: its group's VM listing", pick("byname-node"), []string{ids["byname"]},
			map[string]string{"byname-node": ids["byname"]}, map[string]int{"VirtualMachines.List": 1}},
		{"a scale set that is gone", pick("missing-vmss"), []string{"x"},
			map[string]string{"missing-vmss": ""}, map[string]int{"VirtualMachineScaleSets.Get": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newTestProvider(t, env, nil)
			// A cached listing is not used: the read is fresh.
			if _, err := p.Snapshot(t.Context(), all, cloud.ReadOptions{}); err != nil {
				t.Fatal(err)
			}
			env.Server.ResetCalls()
			snap, err := p.Snapshot(t.Context(), c.nodes, cloud.ReadOptions{Target: cloud.TargetScaleSet, Resources: c.resources})
			if err != nil {
				t.Fatal(err)
			}
			for node, res := range c.want {
				pl := snap.Placements[node]
				if pl.Resource != res || pl.Managed != (res != "") {
					t.Errorf("%s: placement %+v, want resource %q", node, pl, res)
				}
			}
			if got := armCalls(env.Server, readOps...); fmt.Sprint(got) != fmt.Sprint(c.calls) {
				t.Errorf("ARM reads = %v, want %v", got, c.calls)
			}
		})
	}
}

// A targeted read sees a change made since the last listing, and leaves
// what it read in the provider's cache for the next (cached) read.
func TestTargetedSnapshotIsFreshAndUpdatesTheCache(t *testing.T) {
	env := startArmsim(t)
	ids := estate(env)
	nodes := placementNodes(env.SubscriptionID)[:2] // pool1's
	p := newTestProvider(t, env, nil)
	if _, err := p.Snapshot(t.Context(), nodes, cloud.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Server.SetTags(ids["pool1"], map[string]string{"env": "dev"}); err != nil {
		t.Fatal(err)
	}
	snap, err := p.Snapshot(t.Context(), nodes, cloud.ReadOptions{Resources: []string{cloud.CanonicalID(ids["pool1"])}})
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Resources[cloud.CanonicalID(ids["pool1"])].Tags; !got.Equal(tags.CaseInsensitive, tags.Set{"env": "dev"}) {
		t.Fatalf("targeted read saw %v, want the changed tags", got)
	}
	env.Server.ResetCalls()
	cached, err := p.Snapshot(t.Context(), nodes, cloud.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cached.Resources[cloud.CanonicalID(ids["pool1"])].Tags; !got.Equal(tags.CaseInsensitive, tags.Set{"env": "dev"}) {
		t.Fatalf("the cached read after it saw %v", got)
	}
	if got := armCalls(env.Server, readOps...); len(got) != 0 {
		t.Fatalf("the cached read called ARM: %v", got)
	}
}

// Covers holds what Discover could find in the subscriptions searched: a
// resource group or a resource in one; not the subscription itself nor
// its own extension resources (the event subscription tagsync's events
// arrive through), which the metadata controller would otherwise read on
// every change of them.
func TestCoversOnlyWhatDiscoverFinds(t *testing.T) {
	env := startArmsim(t)
	ids := estate(env)
	p := env.provider()
	sub := "/subscriptions/" + env.SubscriptionID
	for id, want := range map[string]bool{
		ids["pool1"]:                   true,
		sub + "/resourceGroups/rg-aks": true,
		sub:                            false,
		sub + "/providers/Microsoft.EventGrid/eventSubscriptions/tagsync":           false,
		"/subscriptions/00000000-0000-0000-0000-00000000ffff/resourceGroups/rg-aks": false,
	} {
		if got := p.Covers(id, nil); got != want {
			t.Errorf("Covers(%s) = %v, want %v", id, got, want)
		}
	}
}

// ReadClassified reads one resource with one GET, whatever its type, as
// Discover finds it.
func TestReadClassified(t *testing.T) {
	env := startArmsim(t)
	ids := estate(env)
	zone := env.resource("rg-aks", armsim.Resource{Type: "Microsoft.Network/dnszones", Name: "example.com", Tags: map[string]string{"team": "dns"}})
	p := env.provider()
	for id, want := range map[string]cloud.Classified{
		ids["pool1"]: {Type: "microsoft.compute/virtualmachinescalesets", Tags: tags.Set{"env": "prod"}},
		zone:         {Type: "microsoft.network/dnszones", Tags: tags.Set{"team": "dns"}},
	} {
		env.Server.ResetCalls()
		res, err := p.ReadClassified(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Tags.Equal(tags.CaseInsensitive, want.Tags) || res.Type != want.Type || res.Scope != env.SubscriptionID ||
			res.Rules.MaxTags != RulesFor(want.Type).MaxTags {
			t.Errorf("%s: %+v, want type %s, tags %v", id, res, want.Type, want.Tags)
		}
		reads := 0
		for _, n := range armCalls(env.Server, readOps...) {
			reads += n
		}
		if reads != 1 {
			t.Errorf("%s: %d ARM reads, want one GET", id, reads)
		}
	}
	if _, err := p.ReadClassified(t.Context(), strings.Replace(zone, "example.com", "gone.example", 1)); !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("a resource that is gone: %v, want ErrNotFound", err)
	}
}

// A reader of a change (cloud.WithReadAfter: when the change was received)
// takes another reader's read of the same resource sent after that, and
// reads itself when the only read is older.
func TestReadersOfOneChangeShareARead(t *testing.T) {
	env := startArmsim(t)
	ids := estate(env)
	p := env.provider()
	received := time.Now()
	if _, err := p.ReadClassified(t.Context(), ids["pool1"]); err != nil { // the first reader
		t.Fatal(err)
	}
	env.Server.ResetCalls()
	res, err := p.ReadClassified(cloud.WithReadAfter(t.Context(), received), ids["pool1"])
	if err != nil || !res.Tags.Equal(tags.CaseInsensitive, tags.Set{"env": "prod"}) {
		t.Fatalf("the second reader: %+v, %v", res, err)
	}
	if got := armCalls(env.Server, readOps...); len(got) != 0 {
		t.Errorf("the second reader of one change read ARM: %v, want the first reader's read", got)
	}
	if err := env.Server.SetTags(ids["pool1"], map[string]string{"env": "dev"}); err != nil {
		t.Fatal(err)
	}
	res, err = p.ReadClassified(cloud.WithReadAfter(t.Context(), time.Now()), ids["pool1"])
	if err != nil || res.Tags["env"] != "dev" {
		t.Fatalf("a reader of a later change: %+v, %v; want env=dev", res, err)
	}
	if got := armCalls(env.Server, readOps...); fmt.Sprint(got) != "map[VirtualMachineScaleSets.Get:1]" {
		t.Errorf("a reader of a later change read %v, want one GET of its own", got)
	}

	// Readers of one change that come at once make one read.
	env.Server.ResetCalls()
	received = time.Now()
	const readers = 8
	done := make(chan error, readers)
	for range readers {
		go func() {
			_, err := p.ReadClassified(cloud.WithReadAfter(t.Context(), received), ids["pool1"])
			done <- err
		}()
	}
	for range readers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := armCalls(env.Server, readOps...); fmt.Sprint(got) != "map[VirtualMachineScaleSets.Get:1]" {
		t.Errorf("8 readers of one change at once read %v, want one GET", got)
	}

	// tagsync writes the resource: a reader of the same change must not
	// take the read from before the write, nor put it into the cache.
	if _, err := p.PatchTags(t.Context(), ids["pool1"], tags.Patch{Set: tags.Set{"env": "written"}}); err != nil {
		t.Fatal(err)
	}
	res, err = p.ReadClassified(cloud.WithReadAfter(t.Context(), received), ids["pool1"])
	if err != nil || res.Tags["env"] != "written" {
		t.Fatalf("a reader of a change after tagsync's write: %+v, %v; want env=written", res, err)
	}
	env.Server.ResetCalls()
	cached, err := p.Snapshot(t.Context(), []cloud.Node{node("uniform-0", instanceProviderID(env.SubscriptionID, "rg-aks", "pool1", "0"), nil)}, cloud.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cached.Resources[cloud.CanonicalID(ids["pool1"])].Tags["env"]; got != "written" {
		t.Errorf("the cache after the write and the reads holds env=%q, want written", got)
	}
}
