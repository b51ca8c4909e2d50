package cloud

import (
	"fmt"
	"sort"
	"strings"
)

// Providers are the clouds a tagsync process is configured for, keyed by
// the name a spec's provider field uses ("azure", "aws"). One Provider per
// cloud and process: its client-side budget and throttle gates are shared by
// every controller.
type Providers map[string]Provider

// NewProviders indexes providers by their Name.
func NewProviders(ps ...Provider) Providers {
	out := Providers{}
	for _, p := range ps {
		out[p.Name()] = p
	}
	return out
}

// Get returns the provider a spec names, or an error that says which are
// configured.
func (ps Providers) Get(name string) (Provider, error) {
	if p, ok := ps[name]; ok {
		return p, nil
	}
	names := make([]string, 0, len(ps))
	for n := range ps {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("provider %q is not configured in this tagsync (configured: %s)", name, strings.Join(names, ", "))
}

// Jobs a provider may support, as errors name them.
const (
	jobNodeSync   = "the node sync (NodeTagSync)"
	jobClassified = "resources found by classifier tags (metadata objects)"
	jobWorkload   = "the resources of workloads (WorkloadTagPolicy)"
)

// NodeProvider returns the provider a NodeTagSync names, or an error that
// says it is not configured or does not support the node sync.
func (ps Providers) NodeProvider(name string) (NodeProvider, error) {
	return lookup[NodeProvider](ps, name, jobNodeSync)
}

// ClassifiedProvider returns the provider a metadata object names, or an
// error that says it is not configured or does not support resources found
// by classifier tags.
func (ps Providers) ClassifiedProvider(name string) (ClassifiedProvider, error) {
	return lookup[ClassifiedProvider](ps, name, jobClassified)
}

// WorkloadProvider returns the provider a WorkloadTagPolicy names, or an
// error that says it is not configured or does not tag workloads'
// resources.
func (ps Providers) WorkloadProvider(name string) (WorkloadProvider, error) {
	return lookup[WorkloadProvider](ps, name, jobWorkload)
}

// lookup returns the provider named name as a T, the interface of a job.
func lookup[T Provider](ps Providers, name, job string) (T, error) {
	var zero T
	p, err := ps.Get(name)
	if err != nil {
		return zero, err
	}
	t, ok := p.(T)
	if !ok {
		return zero, fmt.Errorf("provider %q does not support %s; it supports only %s", name, job, supported(p))
	}
	return t, nil
}

// supported names the jobs p supports.
func supported(p Provider) string {
	var jobs []string
	if _, ok := p.(NodeProvider); ok {
		jobs = append(jobs, jobNodeSync)
	}
	if _, ok := p.(ClassifiedProvider); ok {
		jobs = append(jobs, jobClassified)
	}
	if _, ok := p.(WorkloadProvider); ok {
		jobs = append(jobs, jobWorkload)
	}
	if len(jobs) == 0 {
		return "its name and tag rules"
	}
	return strings.Join(jobs, " and ")
}
