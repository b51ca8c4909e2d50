package azure

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// listKind says what a listing holds.
type listKind int

const (
	listVMs listKind = iota
	listScaleSets
)

// String names what a listing holds, in words.
func (k listKind) String() string {
	if k == listScaleSets {
		return "scale sets"
	}
	return "virtual machines"
}

// listKey names one resource group's listing of one kind; sub and rg are
// lower-cased.
type listKey struct {
	kind    listKind
	sub, rg string
}

// newListKey builds a key from a subscription and group in any casing.
func newListKey(kind listKind, sub, rg string) listKey {
	return listKey{kind: kind, sub: strings.ToLower(sub), rg: strings.ToLower(rg)}
}

// String names the key for singleflight.
func (k listKey) String() string { return fmt.Sprintf("%d/%s/%s", k.kind, k.sub, k.rg) }

// entry is a VM or scale set as listed. Entries are never modified once
// published; updates replace them.
type entry struct {
	ID           string // cloud casing
	Name         string
	ComputerName string // VMs
	ScaleSetID   string // VMs in a Flexible scale set
	Tags         tags.Set
	ETag         string
}

// resource returns the entry as a cloud.Resource with its own tag map.
func (e *entry) resource() cloud.Resource {
	t := e.Tags.Clone()
	if t == nil {
		t = tags.Set{}
	}
	return cloud.Resource{ID: e.ID, Tags: t}
}

// listing is one resource group's VMs or scale sets at one moment. It is
// immutable once published (copy on write).
type listing struct {
	at         time.Time
	byID       map[string]*entry // by CanonicalID
	byName     map[string]*entry // by lower-cased name
	byComputer map[string]*entry // by lower-cased computer name
}

// newListing indexes entries.
func newListing(at time.Time, entries []*entry) *listing {
	l := &listing{at: at, byID: map[string]*entry{}, byName: map[string]*entry{}, byComputer: map[string]*entry{}}
	for _, e := range entries {
		l.put(e)
	}
	return l
}

// put indexes e (only on a listing not yet published).
func (l *listing) put(e *entry) {
	l.byID[cloud.CanonicalID(e.ID)] = e
	l.byName[strings.ToLower(e.Name)] = e
	if e.ComputerName != "" {
		l.byComputer[strings.ToLower(e.ComputerName)] = e
	}
}

// with returns a copy of l in which e replaces the entry with its ID.
func (l *listing) with(e *entry) *listing {
	c := &listing{at: l.at, byID: maps.Clone(l.byID), byName: maps.Clone(l.byName), byComputer: maps.Clone(l.byComputer)}
	c.put(e)
	return c
}

// listing returns a resource group's listing: from the cache when younger
// than CacheTTL (unless fresh), else listed (following every page) with
// concurrent callers sharing one request.
func (p *Provider) listing(ctx context.Context, key listKey, sub, rg string, fresh bool) (*listing, error) {
	if !fresh {
		if l := p.cached(key); l != nil {
			return l, nil
		}
		v, err, _ := p.flight.Do(key.String(), func() (any, error) {
			if l := p.cached(key); l != nil { // a flight that just landed
				return l, nil
			}
			return p.fetch(ctx, key, sub, rg)
		})
		if err != nil {
			return nil, err
		}
		return v.(*listing), nil
	}
	return p.fetch(ctx, key, sub, rg)
}

// cached returns a live cached listing, or nil.
func (p *Provider) cached(key listKey) *listing {
	if p.opts.CacheTTL < 0 {
		return nil
	}
	p.cacheMu.Lock()
	defer p.cacheMu.Unlock()
	l := p.cache[key]
	if l == nil || p.now().Sub(l.at) >= p.opts.CacheTTL {
		return nil
	}
	return l
}

// fetch lists a resource group and caches the result. A missing group is
// an empty listing: its nodes are reported as not found.
func (p *Provider) fetch(ctx context.Context, key listKey, sub, rg string) (*listing, error) {
	c, err := p.clientsFor(sub)
	if err != nil {
		return nil, err
	}
	at := p.now()
	var entries []*entry
	if key.kind == listVMs {
		entries, err = listVMEntries(ctx, c, rg)
	} else {
		entries, err = listScaleSetEntries(ctx, c, rg)
	}
	if err != nil && !isNotFound(err) {
		return nil, p.armErr(fmt.Sprintf("azure: list %s in resource group %s (subscription %s)", key.kind, rg, sub), err)
	}
	l := newListing(at, entries)
	p.store(key, l)
	return l, nil
}

// store caches l unless a newer listing is cached already.
func (p *Provider) store(key listKey, l *listing) {
	if p.opts.CacheTTL < 0 {
		return
	}
	p.cacheMu.Lock()
	defer p.cacheMu.Unlock()
	if old := p.cache[key]; old == nil || !old.at.After(l.at) {
		p.cache[key] = l
	}
}

// updateCache puts the state a write left behind into the cached listing
// of the resource's group, so the next Snapshot needs no read.
func (p *Provider) updateCache(kind listKind, sub, rg string, e *entry) {
	key := newListKey(kind, sub, rg)
	p.cacheMu.Lock()
	defer p.cacheMu.Unlock()
	if l := p.cache[key]; l != nil {
		if old := l.byID[cloud.CanonicalID(e.ID)]; old != nil {
			n := *e
			n.ComputerName, n.ScaleSetID = old.ComputerName, old.ScaleSetID
			e = &n
		}
		p.cache[key] = l.with(e)
	}
}

// dropCache forgets a resource group's cached listing, so the next
// Snapshot lists it afresh.
func (p *Provider) dropCache(kind listKind, sub, rg string) {
	p.cacheMu.Lock()
	defer p.cacheMu.Unlock()
	delete(p.cache, newListKey(kind, sub, rg))
}

// listVMEntries lists a resource group's VMs, all pages.
func listVMEntries(ctx context.Context, c *clients, rg string) ([]*entry, error) {
	return allEntries(ctx, c.vms.NewListPager(rg, nil),
		func(page armcompute.VirtualMachinesClientListResponse) []*armcompute.VirtualMachine {
			return page.Value
		},
		func(vm *armcompute.VirtualMachine) bool { return vm != nil && vm.ID != nil }, vmEntry)
}

// listScaleSetEntries lists a resource group's scale sets, all pages.
func listScaleSetEntries(ctx context.Context, c *clients, rg string) ([]*entry, error) {
	return allEntries(ctx, c.vmss.NewListPager(rg, nil),
		func(page armcompute.VirtualMachineScaleSetsClientListResponse) []*armcompute.VirtualMachineScaleSet {
			return page.Value
		},
		func(ss *armcompute.VirtualMachineScaleSet) bool { return ss != nil && ss.ID != nil }, scaleSetEntry)
}

// allEntries pages through pager and converts each item that has an ID
// (hasID) to an entry.
func allEntries[P, R any](ctx context.Context, pager *runtime.Pager[P], items func(P) []*R, hasID func(*R) bool,
	toEntry func(*R) *entry) ([]*entry, error) {
	var out []*entry
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range items(page) {
			if hasID(it) {
				out = append(out, toEntry(it))
			}
		}
	}
	return out, nil
}

// vmEntry converts an SDK VM.
func vmEntry(vm *armcompute.VirtualMachine) *entry {
	e := &entry{ID: deref(vm.ID), Name: deref(vm.Name), Tags: toSet(vm.Tags), ETag: deref(vm.Etag)}
	if pr := vm.Properties; pr != nil {
		if pr.OSProfile != nil {
			e.ComputerName = deref(pr.OSProfile.ComputerName)
		}
		if pr.VirtualMachineScaleSet != nil {
			e.ScaleSetID = deref(pr.VirtualMachineScaleSet.ID)
		}
	}
	return e
}

// scaleSetEntry converts an SDK scale set.
func scaleSetEntry(ss *armcompute.VirtualMachineScaleSet) *entry {
	return &entry{ID: deref(ss.ID), Name: deref(ss.Name), Tags: toSet(ss.Tags), ETag: deref(ss.Etag)}
}

// toSet converts SDK tags.
func toSet(m map[string]*string) tags.Set {
	s := make(tags.Set, len(m))
	for k, v := range m {
		s[k] = deref(v)
	}
	return s
}

// fromSet converts tags for the SDK.
func fromSet(s tags.Set) map[string]*string {
	m := make(map[string]*string, len(s))
	for k, v := range s {
		m[k] = &v
	}
	return m
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// isNotFound reports an ARM 404.
func isNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// statusOf returns the HTTP status of an ARM error, or 0.
func statusOf(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}
