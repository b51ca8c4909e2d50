package main

import (
	"context"
	"fmt"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud/azure"
)

// sub is the subscription every layout lives in.
const sub = armsimtest.SubscriptionID

// simCloud is armsim over HTTPS with ARM's real throttling limits (reads:
// bucket 250, refill 25/s; writes: 200, 10/s per subscription), writes that
// complete synchronously, and a service principal the controller logs in as.
type simCloud struct {
	srv *armsim.Server
	// dir holds the scenario's files (armsim's CA, secrets, logs).
	dir string
}

func startCloud(dir string) (*simCloud, error) {
	// Throttle: zero value = ARM's limits, enforced.
	s, err := benchkit.StartARM(dir, armsim.Options{})
	if err != nil {
		return nil, err
	}
	if err := s.CreateSubscription(sub, nil); err != nil {
		_ = s.Close()
		return nil, err
	}
	return &simCloud{srv: s, dir: dir}, nil
}

func (c *simCloud) close() { _ = c.srv.Close() }

// provider builds the Azure provider as `tagsync run` does with no tuning
// flags (benchkit.AzureProvider).
func (c *simCloud) provider(ctx context.Context) (*azure.Provider, error) {
	return benchkit.AzureProvider(ctx, c.srv, "")
}

// pool is a Uniform scale set of a layout.
type pool struct {
	rg, name string
	size     int
	tags     map[string]string
}

// vm is a standalone VM of a layout.
type vm struct {
	rg, name string
	tags     map[string]string
}

// layout is what a scenario builds in the cloud; each instance and VM gets a
// Node.
type layout struct {
	pools []pool
	vms   []vm
}

// nodeSpec is one Node to create.
type nodeSpec struct {
	name, providerID, pool string
	expect                 map[string]string // labels the controller must add
	labels                 map[string]string // labels the Node is created with besides the kubelet's
}

// built is a layout as created.
type built struct {
	nodes     []nodeSpec
	scaleSets map[string]string // pool name → ARM ID
	groups    []string
}

// expected returns node → expected labels.
func expected(nodes []nodeSpec) map[string]map[string]string {
	out := make(map[string]map[string]string, len(nodes))
	for _, n := range nodes {
		out[n.name] = n.expect
	}
	return out
}

// build creates the layout's resource groups, scale sets, instances and VMs.
func (c *simCloud) build(l layout) (built, error) {
	out := built{scaleSets: map[string]string{}}
	groups := map[string]bool{}
	group := func(rg string) error {
		if groups[rg] {
			return nil
		}
		groups[rg] = true
		out.groups = append(out.groups, rg)
		_, err := c.srv.CreateResourceGroup(sub, armsim.ResourceGroup{Name: rg, Location: "westeurope"})
		return err
	}
	for _, p := range l.pools {
		if err := group(p.rg); err != nil {
			return out, err
		}
		id, err := c.srv.CreateScaleSet(sub, p.rg, armsim.ScaleSet{Name: p.name, Location: "westeurope", Mode: armsim.Uniform, SKU: "Standard_D4s_v5", Tags: p.tags})
		if err != nil {
			return out, err
		}
		out.scaleSets[p.name] = id
		ids, err := c.srv.AddInstances(id, p.size)
		if err != nil {
			return out, err
		}
		for i, iid := range ids {
			out.nodes = append(out.nodes, nodeSpec{
				name: fmt.Sprintf("aks-%s-vmss%06d", p.name, i), providerID: "azure://" + iid, pool: p.name, expect: labelsFor(p.tags),
			})
		}
	}
	for _, v := range l.vms {
		if err := group(v.rg); err != nil {
			return out, err
		}
		id, err := c.srv.CreateVM(sub, v.rg, armsim.VirtualMachine{Name: v.name, Location: "westeurope", Size: "Standard_D4s_v5", Tags: v.tags})
		if err != nil {
			return out, err
		}
		out.nodes = append(out.nodes, nodeSpec{name: v.name, providerID: "azure://" + id, pool: "standalone", expect: labelsFor(v.tags)})
	}
	return out, nil
}

// labelsFor maps tags to the labels the default NodeTagSync writes (the
// layouts use tag names and values that need no escaping).
func labelsFor(tags map[string]string) map[string]string {
	out := make(map[string]string, len(tags))
	for k, v := range tags {
		out[labelPrefix+k] = v
	}
	return out
}

// vmTags are ~5 tags of a standalone VM.
func vmTags(i int) map[string]string {
	return map[string]string{
		"env": "prod", "costcenter": fmt.Sprintf("cc-%04d", 2000+i%7), "team": "legacy",
		"owner": "legacy-oncall", "role": []string{"gateway", "build", "db", "cache", "batch"}[i%5],
	}
}

// callStats is the ARM traffic of a phase as armsim saw it, and what the
// provider counted.
type callStats struct {
	benchkit.ARMTally
	// Provider is what the provider counted (Provider.Calls()), retries
	// and polls included.
	Provider map[string]int `json:"providerByOperation,omitempty"`
	// Errors are the calls answered with an error, by operation and code
	// (on AWS, as the fidelity layer answered them).
	Errors map[string]int `json:"errorsByOperation,omitempty"`
}

// benchCloud is the cloud a scenario runs against, as its measurements
// see it.
type benchCloud interface {
	// resetCalls starts counting the cloud's requests afresh.
	resetCalls()
	// stats are the requests since resetCalls, with provider, what the
	// provider counted meanwhile.
	stats(provider map[string]int) callStats
}

// resetCalls forgets armsim's request log.
func (c *simCloud) resetCalls() { c.srv.ResetCalls() }

// stats are armsim's requests, classified.
func (c *simCloud) stats(provider map[string]int) callStats { return armStats(c.srv.Calls(), provider) }

// armStats classifies armsim's call counts.
func armStats(calls armsim.Calls, provider map[string]int) callStats {
	return callStats{ARMTally: benchkit.TallyARM(calls), Provider: provider}
}
