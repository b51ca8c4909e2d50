// Package cloudtest is an in-memory cloud provider (cloud.NodeProvider and
// cloud.ClassifiedProvider) for pure unit tests of controller logic:
// resources and node placements are set up directly, every call is recorded,
// and errors can be injected per operation. Integration tests use the real
// providers against armsim and moto_server instead.
package cloudtest

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// Operations the fake records, as Call.Op.
const (
	OpSnapshot  = "Snapshot"
	OpPatchTags = "PatchTags"
	OpDiscover  = "Discover"
	OpWriteTags = "WriteTags"
)

// Call is one recorded call.
type Call struct {
	// Op is OpSnapshot, OpPatchTags, OpDiscover or OpWriteTags.
	Op string
	// ID is the resource of a PatchTags.
	ID string
	// IDs are the resources of a WriteTags write.
	IDs []string
	// Patch is the patch of a PatchTags or a WriteTags write.
	Patch tags.Patch
	// Nodes are the node names of a Snapshot.
	Nodes []string
	// Fresh is a Snapshot's ReadOptions.Fresh.
	Fresh bool
	// Batch is, for a PatchTags, how many resources the Fresh write
	// that wrote it wrote together (0: a PatchTags of its own).
	Batch int
}

// Provider is the fake. The zero value is not usable; call New.
type Provider struct {
	rules    tags.Rules
	platform []tags.PlatformKey

	mu         sync.Mutex
	resources  map[string]cloud.Resource  // by CanonicalID
	placements map[string]cloud.Placement // by node name
	failed     []cloud.ScopeError
	limits     map[string]int     // tag limits by CanonicalID, where not the rules'
	errs       map[string][]error // by operation, consumed in order
	calls      []Call
}

var (
	_ cloud.NodeProvider       = (*Provider)(nil)
	_ cloud.ClassifiedProvider = (*Provider)(nil)
)

// New returns an empty fake with the given tag rules (e.g. azure.TagRules).
func New(rules tags.Rules) *Provider {
	return &Provider{rules: rules, resources: map[string]cloud.Resource{},
		placements: map[string]cloud.Placement{}, limits: map[string]int{}, errs: map[string][]error{}}
}

// Name returns "fake".
func (p *Provider) Name() string { return "fake" }

// Rules returns the rules given to New.
func (p *Provider) Rules() tags.Rules { return p.rules }

// PlatformKeys returns the keys SetPlatformKeys gave (none by default).
func (p *Provider) PlatformKeys() []tags.PlatformKey { return p.platform }

// SetPlatformKeys sets the keys PlatformKeys returns; call it before use.
func (p *Provider) SetPlatformKeys(keys []tags.PlatformKey) { p.platform = keys }

// SetResource creates or replaces a resource with the given tags.
func (p *Provider) SetResource(id string, t tags.Set) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resources[cloud.CanonicalID(id)] = cloud.Resource{ID: id, Tags: t.Clone()}
}

// Resource returns a resource's current tags.
func (p *Provider) Resource(id string) (cloud.Resource, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.resources[cloud.CanonicalID(id)]
	r.Tags = r.Tags.Clone()
	return r, ok
}

// Place says which resource carries a node's tags (shared: several nodes
// share it, as a scale set's do).
func (p *Provider) Place(node, resourceID string, shared bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.placements[node] = cloud.Placement{Managed: true, Resource: resourceID, Shared: shared, Scope: "fake"}
}

// FailScope makes every Snapshot report scope as unreadable, with err on
// the given nodes' placements.
func (p *Provider) FailScope(scope string, err error, nodes ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed = append(p.failed, cloud.ScopeError{Scope: scope, Err: err})
	for _, n := range nodes {
		p.placements[n] = cloud.Placement{Reason: err.Error(), Err: err, Scope: scope}
	}
}

// FailNext makes the next calls of op fail with errs, one per call.
func (p *Provider) FailNext(op string, errs ...error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs[op] = append(p.errs[op], errs...)
}

// Calls returns the calls so far.
func (p *Provider) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

// Count is how many calls of op were made.
func (p *Provider) Count(op string) int {
	n := 0
	for _, c := range p.Calls() {
		if c.Op == op {
			n++
		}
	}
	return n
}

// Snapshot returns the placements of the given nodes (unmanaged when not
// placed) and the resources they name.
func (p *Provider) Snapshot(_ context.Context, nodes []cloud.Node, opts cloud.ReadOptions) (cloud.Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	call := Call{Op: OpSnapshot, Fresh: opts.Fresh}
	for _, n := range nodes {
		call.Nodes = append(call.Nodes, n.Name)
	}
	p.calls = append(p.calls, call)
	if err := p.nextErr(OpSnapshot); err != nil {
		return cloud.Snapshot{}, err
	}
	snap := cloud.Snapshot{Placements: map[string]cloud.Placement{}, Resources: map[string]cloud.Resource{},
		Failed: append([]cloud.ScopeError(nil), p.failed...)}
	for _, n := range nodes {
		pl, ok := p.placements[n.Name]
		if !ok {
			pl = cloud.Placement{Reason: "not placed in the fake cloud"}
		}
		snap.Placements[n.Name] = pl
		if res, ok := p.resources[cloud.CanonicalID(pl.Resource)]; ok && pl.Managed {
			res.Tags = res.Tags.Clone()
			snap.Resources[cloud.CanonicalID(res.ID)] = res
		}
	}
	return snap, nil
}

// PatchTags applies the patch with the rules' name comparison.
func (p *Provider) PatchTags(_ context.Context, id string, patch tags.Patch) (cloud.Resource, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.patchLocked(id, patch, 0)
}

// patchLocked is PatchTags, recorded as a write of a batch of batch
// resources (0: none). Callers hold p.mu.
func (p *Provider) patchLocked(id string, patch tags.Patch, batch int) (cloud.Resource, error) {
	p.calls = append(p.calls, Call{Op: OpPatchTags, ID: id, Patch: patch, Batch: batch})
	if err := p.nextErr(OpPatchTags); err != nil {
		return cloud.Resource{}, err
	}
	res, ok := p.resources[cloud.CanonicalID(id)]
	if !ok {
		return cloud.Resource{}, fmt.Errorf("fake: resource %s: %w", id, cloud.ErrNotFound)
	}
	res.Tags = patch.Apply(p.rules.NameCase(), res.Tags)
	p.resources[cloud.CanonicalID(id)] = res
	res.Tags = res.Tags.Clone()
	return res, nil
}

// patchBatch is the fresh batch write of a Fresh TagWrite: patch written
// to each of ids as PatchTags does, as one batch: each resource's write is
// recorded as a PatchTags call (with Batch, the batch's size) and takes
// the next error FailNext queued for OpPatchTags; results are reported
// once every resource is written, as a batching cloud's complete together.
func (p *Provider) patchBatch(_ context.Context, ids []string, patch tags.Patch, each func(id string, res cloud.Resource, err error)) {
	type result struct {
		res cloud.Resource
		err error
	}
	results := make([]result, len(ids))
	p.mu.Lock()
	for i, id := range ids {
		results[i].res, results[i].err = p.patchLocked(id, patch, len(ids))
	}
	p.mu.Unlock()
	for i, id := range ids {
		each(id, results[i].res, results[i].err)
	}
}

func (p *Provider) nextErr(op string) error {
	q := p.errs[op]
	if len(q) == 0 {
		return nil
	}
	p.errs[op] = q[1:]
	return q[0]
}

// SetLimit gives one resource a tag limit of its own (e.g. 15 for a DNS
// zone); Discover reports it in Classified.Rules and WriteTags enforces it.
func (p *Provider) SetLimit(id string, maxTags int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limits[cloud.CanonicalID(id)] = maxTags
}

// rulesOf returns a resource's rules. Callers hold p.mu.
func (p *Provider) rulesOf(id string) tags.Rules {
	r := p.rules
	if n, ok := p.limits[cloud.CanonicalID(id)]; ok {
		r.MaxTags = n
	}
	return r
}

// Discover returns every resource carrying one of the classifiers, sorted
// by CanonicalID; the fake has one scope and Calls is 1.
func (p *Provider) Discover(_ context.Context, classifiers []cloud.Classifier, _ cloud.DiscoverOptions) (cloud.Discovery, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, Call{Op: OpDiscover})
	if err := p.nextErr(OpDiscover); err != nil {
		return cloud.Discovery{}, err
	}
	d := cloud.Discovery{Calls: 1, Failed: append([]cloud.ScopeError(nil), p.failed...)}
	keys := make([]string, 0, len(p.resources))
	for k := range p.resources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	c := p.rules.NameCase()
	for _, k := range keys {
		res := p.resources[k]
		for _, cl := range classifiers {
			if v, ok := res.Tags.Get(c, cl.Name); ok && v == cl.Value {
				d.Resources = append(d.Resources, cloud.Classified{ID: res.ID, Type: "fake", Scope: "fake",
					Tags: res.Tags.Clone(), Rules: p.rulesOf(res.ID)})
				break
			}
		}
	}
	return d, nil
}

// WriteTags applies each write to each of its resources, recording one
// call per write; an error queued with FailNext(OpWriteTags, ...) fails
// every resource of one write. A write that would exceed a resource's tag
// limit fails with cloud.ErrTooManyTags and changes nothing. Each resource
// is reported to each as pending, then written, then reported with its
// result; once each returns an error nothing more is written. A Fresh
// write is written by patchBatch.
func (p *Provider) WriteTags(ctx context.Context, writes []cloud.TagWrite, each func(cloud.WriteResult) error) []cloud.WriteResult {
	stream := cloud.NewResultStream(each)
	var out []cloud.WriteResult
	for _, w := range writes {
		if w.Fresh {
			out = append(out, cloud.WriteFresh(ctx, w, stream, p.patchBatch)...)
			continue
		}
		p.mu.Lock()
		p.calls = append(p.calls, Call{Op: OpWriteTags, IDs: append([]string(nil), w.IDs...), Patch: w.Patch})
		callErr := p.nextErr(OpWriteTags)
		p.mu.Unlock()
		for _, id := range w.IDs {
			out = append(out, p.writeStreamed(stream, id, w, callErr))
		}
	}
	return out
}

// writeStreamed writes one resource between its two reports.
func (p *Provider) writeStreamed(stream *cloud.ResultStream, id string, w cloud.TagWrite, callErr error) cloud.WriteResult {
	if err := stream.Start(id); err != nil {
		return cloud.WriteResult{ID: id, Err: cloud.NotStarted(id, err)}
	}
	p.mu.Lock()
	res := cloud.WriteResult{ID: id, Err: p.writeOne(p.rules.NameCase(), id, w, callErr)}
	p.mu.Unlock()
	_ = stream.Done(res)
	return res
}

// writeOne applies one write to one resource. Callers hold p.mu.
func (p *Provider) writeOne(c tags.NameCase, id string, w cloud.TagWrite, callErr error) error {
	if callErr != nil {
		return callErr
	}
	res, ok := p.resources[cloud.CanonicalID(id)]
	if !ok {
		return fmt.Errorf("fake: resource %s: %w", id, cloud.ErrNotFound)
	}
	patch := tags.Patch{Set: w.Patch.Set}
	for _, n := range w.Patch.Delete {
		want, conditional := w.Expect.Get(c, n)
		if have, ok := res.Tags.Get(c, n); ok && (!conditional || have == want) {
			patch.Delete = append(patch.Delete, n)
		}
	}
	after := patch.Apply(c, res.Tags)
	if limit := p.rulesOf(id).MaxTags; limit > 0 && len(after) > limit {
		return fmt.Errorf("fake: resource %s would carry %d tags, the limit is %d: %w", id, len(after), limit, cloud.ErrTooManyTags)
	}
	res.Tags = after
	p.resources[cloud.CanonicalID(id)] = res
	return nil
}
