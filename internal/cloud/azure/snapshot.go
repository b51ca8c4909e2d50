package azure

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"golang.org/x/sync/errgroup"

	"github.com/tagsync/tagsync/internal/cloud"
)

// Node labels the provider reads.
const (
	// LabelManaged set to "false" marks an on-prem (unmanaged) node.
	LabelManaged = "kubernetes.azure.com/managed"
	// LabelResourceGroup names the resource group of a node without a
	// providerID (cross-resource-group nodes).
	LabelResourceGroup = "kubernetes.azure.com/resource-group"
)

// maxConcurrentLists bounds the listings one Snapshot runs at once.
const maxConcurrentLists = 4

// planKind says what a node needs read.
type planKind int

const (
	planDone     planKind = iota // placement decided without a read
	planScaleSet                 // Uniform instance: its scale set
	planVM                       // VM named by the providerID
	planByName                   // no providerID: VM named like the node
)

// plan is a node's resolution before any read.
type plan struct {
	kind      planKind
	placement cloud.Placement
	sub, rg   string // the node's subscription and resource group, set when kind != planDone
	name      string // scale set, VM or node name
}

// groupRef is a listing to load, with subscription and group in the
// caller's casing.
type groupRef struct{ sub, rg string }

// Snapshot locates nodes and reads the tags of their resources: with
// opts.Resources (a targeted read), one GET per scale set or VM the nodes
// name (targeted.go); else per
// (subscription, resource group) at most one scale-set list and one VM list
// (all pages), shared through a short-lived cache (opts.Fresh bypasses it).
// Unmanaged nodes (on-prem, no or foreign providerID, filtered resource
// group, VM not found) cost no call and are not errors.
//
// A listing that fails (403, a 429 or 503 that outlasts the retries, a
// call its throttle gate held, a 500 after the retries) fails only its
// resource group: the group is reported in Snapshot.Failed (one
// cloud.ScopeError per group, Scope "resource group <rg> in subscription
// <id>", Err the typed listing error), each node that needed it gets a
// placement with Managed false, Err set to that error and Reason saying in
// words what could not be read, and every other node and resource is
// complete. The error return is only for a read that could not run at all:
// the context ended while listings failed.
func (p *Provider) Snapshot(ctx context.Context, nodes []cloud.Node, opts cloud.ReadOptions) (cloud.Snapshot, error) {
	target := opts.Target
	if target == "" {
		target = cloud.TargetScaleSet
	}
	plans := make([]plan, len(nodes))
	need := map[listKey]groupRef{}
	for i, n := range nodes {
		plans[i] = p.plan(n, opts.Scopes)
		pl := plans[i]
		switch pl.kind {
		case planScaleSet:
			need[newListKey(listScaleSets, pl.sub, pl.rg)] = groupRef{pl.sub, pl.rg}
		case planVM, planByName:
			need[newListKey(listVMs, pl.sub, pl.rg)] = groupRef{pl.sub, pl.rg}
		}
	}
	r := &reader{p: p, fresh: opts.Fresh, lists: map[listKey]*listing{}, partial: map[listKey]*listing{}, failed: map[listKey]failure{}}
	if len(opts.Resources) > 0 {
		r.loadTargeted(ctx, plans, target)
	} else {
		r.load(ctx, need)
		if target == cloud.TargetScaleSet {
			r.load(ctx, r.flexScaleSets(plans))
		}
	}
	if err := ctx.Err(); err != nil && len(r.failed) > 0 {
		return cloud.Snapshot{}, fmt.Errorf("azure: snapshot of %d nodes: %w", len(nodes), err)
	}
	snap := cloud.Snapshot{Placements: make(map[string]cloud.Placement, len(nodes)), Resources: map[string]cloud.Resource{}, Failed: r.failures()}
	for i, n := range nodes {
		pl, e := r.resolve(plans[i], target)
		snap.Placements[n.Name] = pl
		if e != nil {
			snap.Resources[cloud.CanonicalID(e.ID)] = e.resource()
		}
	}
	return snap, nil
}

// plan classifies a node without any read.
func (p *Provider) plan(n cloud.Node, groups []string) plan {
	unmanaged := func(format string, args ...any) plan {
		return plan{placement: cloud.Placement{Reason: fmt.Sprintf(format, args...)}}
	}
	if strings.EqualFold(n.Labels[LabelManaged], "false") {
		return unmanaged("on-prem node (label %s=false)", LabelManaged)
	}
	if n.ProviderID == "" {
		rg := n.Labels[LabelResourceGroup]
		switch {
		case rg == "":
			return unmanaged("no providerID and no %s label", LabelResourceGroup)
		case p.cfg.DefaultSubscription == "":
			return unmanaged("no providerID, and no default subscription configured to look the node up in resource group %q", rg)
		case !inGroups(rg, groups):
			return unmanaged("resource group %q is not one of the synced resource groups", rg)
		}
		return plan{kind: planByName, name: n.Name, sub: p.cfg.DefaultSubscription, rg: rg}
	}
	id, err := ParseProviderID(n.ProviderID)
	switch {
	case err != nil:
		return unmanaged("providerID %q is not an Azure providerID", n.ProviderID)
	case id.Kind == KindUnmanaged:
		return unmanaged("providerID %q names no Azure VM (unmanaged node)", n.ProviderID)
	case !inGroups(id.ResourceGroup, groups):
		return unmanaged("resource group %q is not one of the synced resource groups", id.ResourceGroup)
	}
	if id.Kind == KindScaleSetInstance {
		return plan{kind: planScaleSet, name: id.ScaleSet, sub: id.Subscription, rg: id.ResourceGroup}
	}
	return plan{kind: planVM, name: id.VirtualMachine, sub: id.Subscription, rg: id.ResourceGroup}
}

// inGroups reports whether rg passes the resource-group filter.
func inGroups(rg string, groups []string) bool {
	if len(groups) == 0 {
		return true
	}
	for _, g := range groups {
		if strings.EqualFold(g, rg) {
			return true
		}
	}
	return false
}

// reader holds the listings one Snapshot uses and the ones that failed.
type reader struct {
	p     *Provider
	fresh bool
	mu    sync.Mutex
	lists map[listKey]*listing
	// partial are the listings of a targeted read, which hold only the
	// resources it read (also in lists).
	partial map[listKey]*listing
	failed  map[listKey]failure
}

// failure is a listing that could not be read.
type failure struct {
	ref groupRef
	err error
}

// load fetches the listings in need that the reader does not hold yet, at
// most maxConcurrentLists at a time; a failed listing is recorded and does
// not stop the others.
func (r *reader) load(ctx context.Context, need map[listKey]groupRef) {
	// Ending ctx when done stops the connections the transport was still
	// dialling for requests that another connection served.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var g errgroup.Group
	g.SetLimit(maxConcurrentLists)
	for key, ref := range need {
		if r.get(key) != nil || r.failure(key) != nil {
			continue
		}
		g.Go(func() error {
			l, err := r.p.listing(ctx, key, ref.sub, ref.rg, r.fresh)
			r.mu.Lock()
			defer r.mu.Unlock()
			if err != nil {
				r.failed[key] = failure{ref: ref, err: err}
			} else {
				r.lists[key] = l
			}
			return nil
		})
	}
	_ = g.Wait() // the goroutines record their errors
}

// failure returns why a listing failed, or nil.
func (r *reader) failure(key listKey) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed[key].err
}

// failures returns the failed resource groups, one ScopeError per group
// (joining its VM and scale-set listings' errors), sorted by scope.
func (r *reader) failures() []cloud.ScopeError {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := map[string][]error{}
	for key, f := range r.failed {
		scope := groupScope(f.ref.sub, f.ref.rg)
		if key.kind == listVMs { // VMs first, whatever the map's order
			errs[scope] = append([]error{f.err}, errs[scope]...)
		} else {
			errs[scope] = append(errs[scope], f.err)
		}
	}
	out := make([]cloud.ScopeError, 0, len(errs))
	for _, scope := range slices.Sorted(maps.Keys(errs)) {
		err := errs[scope][0]
		if len(errs[scope]) > 1 {
			err = errors.Join(errs[scope]...)
		}
		out = append(out, cloud.ScopeError{Scope: scope, Err: err})
	}
	return out
}

// unreadable is the placement of a node whose listing key failed: not
// managed in this pass, with the error and a sentence saying what could
// not be read.
func (r *reader) unreadable(out cloud.Placement, key listKey) cloud.Placement {
	r.mu.Lock()
	f := r.failed[key]
	r.mu.Unlock()
	answer := f.err.Error()
	var ae *armError
	if errors.As(f.err, &ae) {
		answer = ae.answer
	}
	out.Err = f.err
	out.Reason = fmt.Sprintf("the %s of resource group %q (subscription %s) could not be read, so the node is not synced in this pass: %s",
		key.kind, f.ref.rg, f.ref.sub, answer)
	return out
}

// get returns a loaded listing, or nil.
func (r *reader) get(key listKey) *listing {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lists[key]
}

// flexScaleSets returns the scale-set listings that Flexible members'
// scale sets need.
func (r *reader) flexScaleSets(plans []plan) map[listKey]groupRef {
	need := map[listKey]groupRef{}
	for _, pl := range plans {
		vm := r.findVM(pl)
		if vm == nil || vm.ScaleSetID == "" {
			continue
		}
		id, err := arm.ParseResourceID(vm.ScaleSetID)
		if err != nil {
			continue
		}
		need[newListKey(listScaleSets, id.SubscriptionID, id.ResourceGroupName)] = groupRef{id.SubscriptionID, id.ResourceGroupName}
	}
	return need
}

// findVM returns the VM of a VM plan, or nil.
func (r *reader) findVM(pl plan) *entry {
	if pl.kind != planVM && pl.kind != planByName {
		return nil
	}
	l := r.get(newListKey(listVMs, pl.sub, pl.rg))
	if l == nil {
		return nil
	}
	name := strings.ToLower(pl.name)
	if e := l.byName[name]; e != nil {
		return e
	}
	if pl.kind == planByName {
		return l.byComputer[name]
	}
	return nil
}

// resolve turns a plan into a placement and the entry that carries the
// node's tags (nil when unmanaged).
func (r *reader) resolve(pl plan, target cloud.Target) (cloud.Placement, *entry) {
	out := pl.placement
	if pl.kind != planDone {
		out.Scope = groupScope(pl.sub, pl.rg)
	}
	notFound := func(format string, args ...any) (cloud.Placement, *entry) {
		out.Reason = fmt.Sprintf(format, args...)
		return out, nil
	}
	found := func(e *entry, shared bool) (cloud.Placement, *entry) {
		out.Managed, out.Resource, out.Shared = true, e.ID, shared
		return out, e
	}
	switch pl.kind {
	case planDone:
		return out, nil
	case planScaleSet:
		key := newListKey(listScaleSets, pl.sub, pl.rg)
		if r.failure(key) != nil {
			return r.unreadable(out, key), nil
		}
		e := r.get(key).byName[strings.ToLower(pl.name)]
		if e == nil {
			return notFound("scale set %q not found in resource group %q (subscription %s)", pl.name, pl.rg, pl.sub)
		}
		if target == cloud.TargetInstance {
			out.Note = fmt.Sprintf("Uniform scale-set instances have no tags of their own: synced with scale set %s", e.Name)
		}
		return found(e, true)
	}
	if key := newListKey(listVMs, pl.sub, pl.rg); r.failure(key) != nil {
		return r.unreadable(out, key), nil
	}
	vm := r.findVM(pl)
	switch {
	case vm == nil && pl.kind == planByName:
		return notFound("VM %q not found in resource group %q (subscription %s; the node has no providerID, looked up by VM or computer name)",
			pl.name, pl.rg, pl.sub)
	case vm == nil:
		return notFound("VM %q not found in resource group %q (subscription %s)", pl.name, pl.rg, pl.sub)
	case vm.ScaleSetID == "" || target == cloud.TargetInstance:
		return found(vm, false)
	}
	if key, ok := scaleSetKey(vm.ScaleSetID); ok && r.failure(key) != nil {
		return r.unreadable(out, key), nil
	}
	ss := r.scaleSet(vm.ScaleSetID)
	if ss == nil {
		return notFound("Flexible scale set %s of VM %q not found", vm.ScaleSetID, vm.Name)
	}
	return found(ss, true)
}

// scaleSetKey is the listing key of a scale set's resource group.
func scaleSetKey(id string) (listKey, bool) {
	rid, err := arm.ParseResourceID(id)
	if err != nil {
		return listKey{}, false
	}
	return newListKey(listScaleSets, rid.SubscriptionID, rid.ResourceGroupName), true
}

// scaleSet finds a loaded scale set by ID, or nil.
func (r *reader) scaleSet(id string) *entry {
	key, ok := scaleSetKey(id)
	if !ok {
		return nil
	}
	l := r.get(key)
	if l == nil {
		return nil
	}
	return l.byID[cloud.CanonicalID(id)]
}

// groupScope names a resource group as a scope, in the words of
// Placement.Scope and ScopeError.Scope.
func groupScope(sub, rg string) string {
	return fmt.Sprintf("resource group %s in subscription %s", rg, sub)
}
