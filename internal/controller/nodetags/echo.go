package nodetags

import (
	"context"
	"maps"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// A Node write of a pass comes back as a watch event of that Node. Any
// other Node event may change what a pass would decide (a label edited, a
// Node added), so it makes the next pass of every NodeTagSync full, and a
// full pass lists the cloud once the provider's cache has expired. The
// echo of our own write tells nothing new: the pass that wrote already
// synced that Node. So the controller remembers each write it makes
// (kit.InFlight, which sends it: the record is made before the write is
// sent, as the watch event may come before the answer) and
// recognises the update that is exactly that write: from the version the
// write was guarded by, to labels, base annotation and taints that differ
// from it by the write alone. Such an update triggers no pass, unless it
// changes which NodeTagSync selects the Node.
//
// Example: a targeted pass sets azure.tags/env=staging on node-1, read at
// version 41. The update 41 → 42 that sets that label, and nothing else, is
// the echo. An update 41 → 42 that also sets another label is not (someone
// else's change is in it), nor is any update from another version.

// The same record answers the pass that runs before the cache shows a
// write: the cache then still holds the version the write replaced, and
// the pass counts that Node as in flight rather than redo the write (which
// the API server would refuse).

// isEcho reports whether the update of a Node from old to updated is
// exactly the write w records for it, and forgets the record when it is.
func isEcho(w *kit.InFlight[string], old, updated *cachedNode) bool {
	return w.Echo(old.Name, old.ResourceVersion, func(p kit.NodePatch) bool { return madeOf(p, old, updated) })
}

// madeOf reports whether updated is old with the write p applied, in all
// the controller reads of a Node.
func madeOf(p kit.NodePatch, old, updated *cachedNode) bool {
	wantLabels := maps.Clone(old.Labels)
	if wantLabels == nil {
		wantLabels = map[string]string{}
	}
	maps.Copy(wantLabels, p.Labels.Set)
	for _, k := range p.Labels.Delete {
		delete(wantLabels, k)
	}
	wantBase, wantTaints := old.Annotations[v1alpha1.LastSyncedTagsAnnotation], old.Spec.Taints
	if base, ok := p.Annotations[v1alpha1.LastSyncedTagsAnnotation]; ok {
		wantBase = base
	}
	if p.Taints != nil {
		wantTaints = p.Taints
	}
	return maps.Equal(wantLabels, updated.Labels) && wantBase == updated.Annotations[v1alpha1.LastSyncedTagsAnnotation] &&
		sameTaints(wantTaints, updated.Spec.Taints) && old.Spec.ProviderID == updated.Spec.ProviderID
}

// ownEcho reports whether a Node update is the echo of one of the
// controller's own writes that changes no NodeTagSync's selection of the
// Node: it needs no pass.
func (r *Reconciler) ownEcho(ctx context.Context, oldObj, newObj any) bool {
	old, ok1 := oldObj.(*cachedNode)
	updated, ok2 := newObj.(*cachedNode)
	if !ok1 || !ok2 || !isEcho(&r.writes, old, updated) {
		return false
	}
	syncs, err := r.validSyncs(ctx)
	if err != nil {
		return false
	}
	for _, s := range syncs {
		if s.selector.Matches(nodeLabels{old}) != s.selector.Matches(nodeLabels{updated}) {
			return false
		}
	}
	return true
}
