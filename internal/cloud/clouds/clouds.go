// Package clouds is the registry of the clouds tagsync ships: one line per
// cloud, whose package says everything else about it (cloud.Kind: name,
// tag rules, platform keys, flags, provider, login checks). `tagsync run`,
// `plan` and `login`, the playground and the benchmarks bind flags and
// build providers through it; adding a cloud is its package, a line here,
// the API's provider enum and docs (docs/architecture.md, "Adding a
// cloud").
package clouds

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/azure"
)

// kinds are the clouds, the default one (a spec that names none) first.
var kinds = []*cloud.Kind{
	&azure.Kind,
	&aws.Kind,
}

// All returns the clouds, the default one first.
func All() []*cloud.Kind { return slices.Clone(kinds) }

// Default is the cloud of a spec that names none.
func Default() *cloud.Kind { return kinds[0] }

// Names returns the clouds' names, the default one first.
func Names() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.Name
	}
	return out
}

// Lookup returns the cloud named name.
func Lookup(name string) (*cloud.Kind, error) {
	for _, k := range kinds {
		if k.Name == name {
			return k, nil
		}
	}
	return nil, fmt.Errorf("no cloud %q: tagsync knows %s", name, strings.Join(Names(), ", "))
}

// Of returns the cloud whose resource IDs look like id.
func Of(id string) (*cloud.Kind, error) {
	for _, k := range kinds {
		if k.OwnsID(id) {
			return k, nil
		}
	}
	examples := make([]string, len(kinds))
	for i, k := range kinds {
		examples[i] = k.Title + " " + k.IDExample
	}
	return nil, fmt.Errorf("%q is the resource ID of no cloud tagsync knows (%s)", id, strings.Join(examples, ", "))
}

// Set is the settings of several clouds, in registry order.
type Set []cloud.Settings

// Bind binds the flags of kinds (nil: every cloud) for use to fs.
func Bind(fs *pflag.FlagSet, use cloud.Use, kinds ...*cloud.Kind) Set {
	if kinds == nil {
		kinds = All()
	}
	out := make(Set, len(kinds))
	for i, k := range kinds {
		out[i] = k.Bind(fs, use)
	}
	return out
}

// Complete completes every cloud's settings (cloud.Settings.Complete)
// and returns all their errors.
func (s Set) Complete() error {
	var errs []error
	for _, c := range s {
		errs = append(errs, c.Complete())
	}
	return errors.Join(errs...)
}

// Enabled returns the settings of the clouds that start.
func (s Set) Enabled() Set {
	var out Set
	for _, c := range s {
		if c.Enabled() {
			out = append(out, c)
		}
	}
	return out
}

// Providers builds the providers of the clouds that start.
func (s Set) Providers(ctx context.Context, o cloud.ProviderOptions) ([]cloud.Provider, error) {
	var out []cloud.Provider
	for _, c := range s.Enabled() {
		p, err := c.NewProvider(ctx, o)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Get returns the settings of the cloud named name (nil: none).
func (s Set) Get(name string) cloud.Settings {
	for _, c := range s {
		if c.Kind().Name == name {
			return c
		}
	}
	return nil
}
