package nodetags

import (
	"context"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// A change that carries the resource's whole tag set (AWS "Tag Change on
// Resource") spares the targeted pass its read: the pass takes the tags of
// the resource's latest change as its snapshot, with the placements of the
// last full pass. Only the resource's own tags count (a scale set
// instance's change carries the instance's, not its scale set's; an EC2
// instance's change never names the Auto Scaling group its nodes sync
// with, so it routes nowhere under TargetScaleSet), and only from a change
// made after the pass last read or wrote the resource: an older one may
// predate what the nodes already carry. A provider that caches its reads
// (cloud.CarriedTagsTaker: AWS) must take the tags into its cache, which it
// does only when its cached read is older than the change, so later passes
// do not read older tags than the ones synced. Otherwise the resource is
// read.

// markRead records that the resources ids were read or written at.
func (b *changeBook) markRead(at time.Time, ids ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		b.readLocked(id, at)
	}
}

// readLocked is markRead of one resource with b.mu held.
func (b *changeBook) readLocked(id string, at time.Time) {
	if at.After(b.readAt[id]) {
		b.readAt[id] = at
	}
}

// fromChanges builds the snapshot of name's changed resources ids whose
// latest change carried usable tags (see Carried.Usable) that the
// provider took: the resource with those tags, less the names the cloud
// reserves for itself (which snapshots leave out), and its nodes placed as
// the last full pass placed them. It returns the ids it could not serve,
// which the pass reads.
func (b *changeBook) fromChanges(name string, ids []string, carried map[string]kit.Carried, provider cloud.NodeProvider) (cloud.Snapshot, []string) {
	rules := provider.Rules()
	take := func(string, tags.Set, time.Time) bool { return true }
	if t, ok := provider.(cloud.CarriedTagsTaker); ok {
		take = t.TakeTags
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	snap := cloud.Snapshot{Placements: map[string]cloud.Placement{}, Resources: map[string]cloud.Resource{}}
	var read []string
	for _, id := range ids {
		c, ok := carried[id]
		if !ok || !c.Usable(b.readAt[id]) {
			read = append(read, id)
			continue
		}
		own := make(tags.Set, len(c.Tags))
		for k, v := range c.Tags {
			if !rules.IsReservedName(k) {
				own[k] = v
			}
		}
		if !take(id, own, c.Time) {
			read = append(read, id)
			continue
		}
		snap.Resources[id] = cloud.Resource{ID: c.ID, Tags: own}
		for _, n := range b.placed[name][id] {
			snap.Placements[n] = cloud.Placement{Managed: true, Resource: c.ID, Note: b.notes[name][n]}
		}
		b.readLocked(id, c.Time)
	}
	return snap, read
}

// merge adds read, a provider's snapshot, to snap.
func merge(snap *cloud.Snapshot, read cloud.Snapshot) {
	for n, pl := range read.Placements {
		snap.Placements[n] = pl
	}
	for id, res := range read.Resources {
		snap.Resources[id] = res
	}
	snap.Failed = append(snap.Failed, read.Failed...)
}

// readAfterChanges is ctx asking that the reads of the changed resources
// ids be sent after their changes were received, so that a read another
// controller sent for the same changes (the metadata controller's probe of
// a resource it does not know) serves this pass too, whichever of the two
// reads first (cloud.WithReadAfter). A resource whose change's receipt is
// unknown (the retry of a failed pass) is read anew.
func readAfterChanges(ctx context.Context, ids []string, carried map[string]kit.Carried) context.Context {
	var after time.Time
	for _, id := range ids {
		c, ok := carried[id]
		if !ok || c.Received.IsZero() {
			return ctx
		}
		if c.Received.After(after) {
			after = c.Received
		}
	}
	if after.IsZero() {
		return ctx
	}
	return cloud.WithReadAfter(ctx, after)
}
