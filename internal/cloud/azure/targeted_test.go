package azure

import (
	"fmt"
	"testing"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

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
