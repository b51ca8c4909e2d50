package azure

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v4"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// refKind is the kind of resource PatchTags writes.
type refKind int

const (
	refOther refKind = iota
	refVM
	refScaleSet
)

// resourceRef is a parsed resource ID.
type resourceRef struct {
	id, sub, rg, name string
	kind              refKind
	typ               string // the resource type, e.g. Microsoft.Compute/disks
}

// parseRef parses an ARM resource ID.
func parseRef(id string) (resourceRef, error) {
	rid, err := arm.ParseResourceID(id)
	if err != nil || rid.SubscriptionID == "" {
		return resourceRef{}, fmt.Errorf("azure: %q is not an ARM resource ID", id)
	}
	ref := resourceRef{id: id, sub: rid.SubscriptionID, rg: rid.ResourceGroupName, name: rid.Name, typ: rid.ResourceType.String()}
	switch strings.ToLower(rid.ResourceType.String()) {
	case "microsoft.compute/virtualmachines":
		ref.kind = refVM
	case "microsoft.compute/virtualmachinescalesets":
		ref.kind = refScaleSet
	}
	return ref, nil
}

// listKind is the listing a VM or scale set lives in.
func (r resourceRef) listKind() listKind {
	if r.kind == refScaleSet {
		return listScaleSets
	}
	return listVMs
}

// PatchTags sets and deletes the named tags of one resource, based on a
// fresh read (one GET), and returns the resource afterwards. Nothing is
// written when the patch changes nothing. Tag names match
// case-insensitively; an existing name keeps its spelling. With
// WriteTagsAPI (default) it sends a Tags API Merge for the set keys and a
// Delete (with the values read, so ARM deletes only unchanged tags) for the
// deleted keys; with WriteResourcePatch it PATCHes the VM or scale set with
// If-Match, re-reading and re-applying on 412 up to MaxWriteAttempts times.
// The read cache is updated with the result; after a failure the cached
// listing of the resource's group is dropped instead. Errors report their
// cloud kind to errors.Is (see the package doc).
func (p *Provider) PatchTags(ctx context.Context, id string, patch tags.Patch) (cloud.Resource, error) {
	ref, err := parseRef(id)
	if err != nil {
		return cloud.Resource{}, err
	}
	var e *entry
	defer p.dropSharedRead(ref)
	if p.opts.WriteMethod == WriteResourcePatch && ref.kind != refOther {
		e, err = p.patchResource(ctx, ref, patch)
	} else {
		e, err = p.patchTagsAPI(ctx, ref, patch)
	}
	if err != nil {
		p.forget(ref)
		return cloud.Resource{}, err
	}
	p.remember(ref, e)
	return e.resource(), nil
}

// patchBatch is the fresh batch write (cloud.WriteFresh): patch written to
// each of ids with PatchTags, one resource at a time in ids' order (ARM
// has no call that writes several resources' tags).
func (p *Provider) patchBatch(ctx context.Context, ids []string, patch tags.Patch, each func(id string, res cloud.Resource, err error)) {
	cloud.PatchEach(ctx, p.PatchTags, ids, patch, each)
}

// remember puts a written VM or scale set into its group's cached listing.
func (p *Provider) remember(ref resourceRef, e *entry) {
	if ref.kind != refOther {
		p.updateCache(ref.listKind(), ref.sub, ref.rg, e)
	}
}

// forget drops the cached listing of a VM or scale set whose write failed:
// the listing may be the stale view the caller computed the patch from,
// and a half-done Tags API write (Delete done, Merge refused) changed the
// resource, so the retry must read afresh.
func (p *Provider) forget(ref resourceRef) {
	if ref.kind != refOther {
		p.dropCache(ref.listKind(), ref.sub, ref.rg)
	}
}

// read GETs a resource's tags (and ETag, for VMs and scale sets).
func (p *Provider) read(ctx context.Context, ref resourceRef) (*entry, error) {
	c, err := p.clientsFor(ref.sub)
	if err != nil {
		return nil, err
	}
	var e *entry
	switch ref.kind {
	case refVM:
		var r armcompute.VirtualMachinesClientGetResponse
		if r, err = c.vms.Get(ctx, ref.rg, ref.name, nil); err == nil {
			e = vmEntry(&r.VirtualMachine)
		}
	case refScaleSet:
		var r armcompute.VirtualMachineScaleSetsClientGetResponse
		if r, err = c.vmss.Get(ctx, ref.rg, ref.name, nil); err == nil {
			e = scaleSetEntry(&r.VirtualMachineScaleSet)
		}
	default:
		var r armresources.TagsClientGetAtScopeResponse
		if r, err = c.tags.GetAtScope(ctx, scope(ref.id), nil); err == nil {
			e = &entry{ID: ref.id, Tags: tagsOf(r.TagsResource)}
		}
	}
	if err != nil {
		return nil, p.wrapf(err, "azure: read tags of %s", ref.id)
	}
	return e, nil
}

// scope is a resource ID as the Tags client wants it (no leading slash).
func scope(id string) string { return strings.TrimPrefix(id, "/") }

// tagsOf returns a Tags API resource's tags.
func tagsOf(r armresources.TagsResource) tags.Set {
	if r.Properties == nil {
		return tags.Set{}
	}
	return toSet(r.Properties.Tags)
}

// tagsAPIOps splits a patch into the Merge and Delete payloads that change
// cur: only keys whose value differs are merged; deletions carry the value
// read so that ARM deletes only a tag nobody changed meanwhile. Names are
// matched as nc says.
func tagsAPIOps(nc tags.NameCase, cur tags.Set, patch tags.Patch) (merge, del tags.Set) {
	merge, del = tags.Set{}, tags.Set{}
	for name, v := range patch.Set {
		if old, ok := cur.Get(nc, name); !ok || old != v {
			merge[name] = v
		}
	}
	for _, name := range patch.Delete {
		if _, ok := patch.Set.Get(nc, name); ok {
			continue
		}
		if spelling, v, ok := cur.Lookup(nc, name); ok {
			del[spelling] = v
		}
	}
	return merge, del
}

// patchTagsAPI writes through the Tags API: Delete, then Merge.
//
// Delete goes first because of ARM's tag limit (50 on VMs and scale sets,
// fewer on some types), which ARM checks on every request against the tags
// that request leaves: a patch that swaps tags on a resource at the limit
// (delete one, set a new one) ends within it, but Merge first would leave
// limit+1 tags for a moment and be refused with TooManyTags, every retry
// alike. Delete first never raises the count.
//
// The order is safe for tag names, which ARM matches case-insensitively,
// because tagsAPIOps never deletes a name the patch sets in any spelling:
// a patch deleting "env" and setting "Env" is a Merge of "Env" alone,
// which ARM applies to the existing "env". Sending that Delete would be
// wrong in either order: after the Merge it would remove the tag just set
// whenever the new value equals the old one (ARM deletes a name whose value
// matches), and before the Merge it would rename "env" to "Env".
func (p *Provider) patchTagsAPI(ctx context.Context, ref resourceRef, patch tags.Patch) (*entry, error) {
	cur, err := p.read(ctx, ref)
	if err != nil {
		return nil, err
	}
	nc := p.Rules().NameCase()
	merge, del := tagsAPIOps(nc, cur.Tags, patch)
	if len(merge) == 0 && len(del) == 0 {
		return cur, nil
	}
	c, err := p.clientsFor(ref.sub)
	if err != nil {
		return nil, err
	}
	result, err := p.deleteThenMerge(ctx, c, ref.id, del, merge)
	if err != nil {
		return nil, err
	}
	if result == nil {
		result = patch.ApplySpelled(nc, cur.Tags, tags.KeepSpelling) // as ARM's Merge: existing names keep their spelling
	}
	// The Tags API does not return the resource's ETag: it is unknown now.
	return &entry{ID: cur.ID, Name: cur.Name, Tags: result}, nil
}

// deleteThenMerge sends the Tags API's Delete of del, then its Merge of
// merge (an empty one is not sent; see patchTagsAPI for the order), and
// returns the tags the last answer carried (nil: none did). An error names
// the operation that failed and whether the deletions were applied.
func (p *Provider) deleteThenMerge(ctx context.Context, c *clients, id string, del, merge tags.Set) (tags.Set, error) {
	var result tags.Set
	deleted := false
	for _, op := range []struct {
		kind armresources.TagsPatchOperation
		tags tags.Set
		verb string
	}{{armresources.TagsPatchOperationDelete, del, "delete"}, {armresources.TagsPatchOperationMerge, merge, "set"}} {
		if len(op.tags) == 0 {
			continue
		}
		r, err := p.tagsPatch(ctx, c, id, op.kind, op.tags)
		if err != nil {
			format := "azure: %s tags %s on %s"
			if deleted {
				format += " (the patch's deletions were applied)"
			}
			return nil, p.wrapf(err, format, op.verb, strings.Join(op.tags.Names(), ", "), id)
		}
		if r.Properties != nil {
			result = toSet(r.Properties.Tags)
		}
		deleted = op.kind == armresources.TagsPatchOperationDelete
	}
	return result, nil
}

// tagsPatch runs one Tags API PATCH to completion.
func (p *Provider) tagsPatch(ctx context.Context, c *clients, id string, op armresources.TagsPatchOperation, t tags.Set) (armresources.TagsResource, error) {
	r, err := pollDone(ctx, p, func() (*runtime.Poller[armresources.TagsClientUpdateAtScopeResponse], error) {
		return c.tags.BeginUpdateAtScope(ctx, scope(id), armresources.TagsPatchResource{
			Operation: to.Ptr(op), Properties: &armresources.Tags{Tags: fromSet(t)},
		}, nil)
	})
	return r.TagsResource, err
}

// pollDone starts a long-running operation and polls it to completion.
func pollDone[T any](ctx context.Context, p *Provider, begin func() (*runtime.Poller[T], error)) (T, error) {
	poller, err := begin()
	if err != nil {
		var zero T
		return zero, err
	}
	return poller.PollUntilDone(ctx, p.pollOptions())
}

// pollOptions are the LRO poll settings.
func (p *Provider) pollOptions() *runtime.PollUntilDoneOptions {
	return &runtime.PollUntilDoneOptions{Frequency: p.opts.PollFrequency}
}

// patchResource writes the VM or scale set's full tag map with If-Match,
// re-reading on 412 Precondition Failed.
func (p *Provider) patchResource(ctx context.Context, ref resourceRef, patch tags.Patch) (*entry, error) {
	for attempt := 1; ; attempt++ {
		cur, err := p.read(ctx, ref)
		if err != nil {
			return nil, err
		}
		nc := p.Rules().NameCase()
		next := patch.ApplySpelled(nc, cur.Tags, tags.KeepSpelling) // the cloud is never renamed
		if next.Equal(nc, cur.Tags) {
			return cur, nil
		}
		e, err := p.update(ctx, ref, next, cur.ETag)
		if err == nil {
			return e, nil
		}
		if statusOf(err) != http.StatusPreconditionFailed || attempt >= MaxWriteAttempts {
			return nil, p.wrapf(err, "azure: write tags %s of %s (attempt %d)", strings.Join(changed(nc, cur.Tags, next), ", "), ref.id, attempt)
		}
	}
}

// changed lists the names whose value differs between a and b (matched as nc
// says), sorted.
func changed(nc tags.NameCase, a, b tags.Set) []string {
	var out []string
	for n, v := range b {
		if old, ok := a.Get(nc, n); !ok || old != v {
			out = append(out, n)
		}
	}
	for n := range a {
		if !b.Has(nc, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// update PATCHes a VM or scale set's tags with If-Match.
func (p *Provider) update(ctx context.Context, ref resourceRef, t tags.Set, etag string) (*entry, error) {
	c, err := p.clientsFor(ref.sub)
	if err != nil {
		return nil, err
	}
	var ifMatch *string
	if etag != "" {
		ifMatch = &etag
	}
	if ref.kind == refVM {
		return pollEntry(ctx, p, func() (*runtime.Poller[armcompute.VirtualMachinesClientUpdateResponse], error) {
			return c.vms.BeginUpdate(ctx, ref.rg, ref.name, armcompute.VirtualMachineUpdate{Tags: fromSet(t)},
				&armcompute.VirtualMachinesClientBeginUpdateOptions{IfMatch: ifMatch})
		}, func(r armcompute.VirtualMachinesClientUpdateResponse) *entry { return vmEntry(&r.VirtualMachine) })
	}
	return pollEntry(ctx, p, func() (*runtime.Poller[armcompute.VirtualMachineScaleSetsClientUpdateResponse], error) {
		return c.vmss.BeginUpdate(ctx, ref.rg, ref.name, armcompute.VirtualMachineScaleSetUpdate{Tags: fromSet(t)},
			&armcompute.VirtualMachineScaleSetsClientBeginUpdateOptions{IfMatch: ifMatch})
	}, func(r armcompute.VirtualMachineScaleSetsClientUpdateResponse) *entry {
		return scaleSetEntry(&r.VirtualMachineScaleSet)
	})
}

// pollEntry runs an update to completion and converts the resource it
// answers with.
func pollEntry[T any](ctx context.Context, p *Provider, begin func() (*runtime.Poller[T], error), toEntry func(T) *entry) (*entry, error) {
	r, err := pollDone(ctx, p, begin)
	if err != nil {
		return nil, err
	}
	return toEntry(r), nil
}
