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
