package azure

import (
	"context"
	"errors"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/tagsync/tagsync/internal/cloud"
)

// loadTargeted is the read of a targeted Snapshot (ReadOptions.Resources):
// instead of listing resource groups it GETs, fresh, each scale set
// (Uniform instances) and VM the nodes name, once each, and with
// TargetScaleSet the Flexible scale sets of the VMs read. Nodes without a
// providerID are looked up by name, which needs their group's VM listing:
// that listing is read, fresh. What the GETs return goes into
// reader-local listings holding only those resources, so resolve places
// the nodes as after a full read, and into the provider's cached listings.
func (r *reader) loadTargeted(ctx context.Context, plans []plan, target cloud.Target) {
	byName := map[listKey]groupRef{}
	gets := map[string]resourceRef{}
	for _, pl := range plans {
		switch pl.kind {
		case planByName:
			byName[newListKey(listVMs, pl.sub, pl.rg)] = groupRef{pl.sub, pl.rg}
		case planScaleSet:
			r.addGet(gets, ScaleSetResourceID(pl.sub, pl.rg, pl.name))
		case planVM:
			r.addGet(gets, VirtualMachineResourceID(pl.sub, pl.rg, pl.name))
		}
	}
	r.fresh = true
	r.load(ctx, byName)
	r.getEach(ctx, gets)
	if target != cloud.TargetScaleSet {
		return
	}
	flex := map[string]resourceRef{}
	for _, pl := range plans {
		if vm := r.findVM(pl); vm != nil && vm.ScaleSetID != "" {
			r.addGet(flex, vm.ScaleSetID)
		}
	}
	r.getEach(ctx, flex)
}

// addGet adds the resource id to read, unless its group's listing is held
// whole already.
func (r *reader) addGet(gets map[string]resourceRef, id string) {
	ref, err := parseRef(id)
	if err != nil {
		return
	}
	key := newListKey(ref.listKind(), ref.sub, ref.rg)
	if r.get(key) != nil && r.partial[key] == nil {
		return
	}
	gets[cloud.CanonicalID(id)] = ref
}

// getEach GETs the resources, at most maxConcurrentLists at a time, into
// the reader's partial listings (an empty one for a group whose resources
// are all gone). A failed GET fails its resource group in this read.
func (r *reader) getEach(ctx context.Context, gets map[string]resourceRef) {
	at := r.p.now()
	for _, ref := range gets {
		key := newListKey(ref.listKind(), ref.sub, ref.rg)
		if r.lists[key] == nil {
			l := newListing(at, nil)
			r.lists[key], r.partial[key] = l, l
		}
	}
	var g errgroup.Group
	g.SetLimit(maxConcurrentLists)
	for _, ref := range gets {
		g.Go(func() error {
			e, sent, err := r.p.readShared(ctx, ref)
			key := newListKey(ref.listKind(), ref.sub, ref.rg)
			r.mu.Lock()
			defer r.mu.Unlock()
			switch {
			case errors.Is(err, cloud.ErrNotFound):
			case err != nil:
				r.failed[key] = failure{ref: groupRef{ref.sub, ref.rg}, err: err}
			default:
				r.lists[key].put(e)
				if sent {
					r.p.remember(ref, e)
				}
			}
			return nil
		})
	}
	_ = g.Wait() // the goroutines record their errors
}

// Covers reports whether the resource is one Discover could find in the
// subscriptions (the default subscription when none are given): a
// resource group or a resource in one. A subscription's own extension
// resources (an Event Grid event subscription, a role assignment) are in
// neither of the tables Discover searches.
func (p *Provider) Covers(id string, scopes []string) bool {
	ref, err := parseRef(id)
	if err != nil || ref.rg == "" {
		return false
	}
	subs, err := p.discoveryScopes(scopes)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(subs, func(s string) bool { return strings.EqualFold(s, ref.sub) })
}

// ReadClassified reads one resource with one GET (a VM or scale set
// through Compute, anything else through the Tags API), fresh, as Discover
// would have found it, or takes a GET of it sent since cloud.WithReadAfter's
// time; a VM or scale set GET it sent also refreshes the cached listing of
// its group.
func (p *Provider) ReadClassified(ctx context.Context, id string) (cloud.Classified, error) {
	ref, err := parseRef(id)
	if err != nil {
		return cloud.Classified{}, err
	}
	e, sent, err := p.readShared(ctx, ref)
	if err != nil {
		return cloud.Classified{}, err
	}
	if sent {
		p.remember(ref, e)
	}
	typ := ref.typ
	return cloud.Classified{ID: e.ID, Type: strings.ToLower(typ), Scope: ref.sub, Tags: e.resource().Tags, Rules: RulesFor(typ)}, nil
}
