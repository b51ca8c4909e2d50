package nodetags

import (
	"context"
	"maps"
	"sync"
)

// A Node write of a pass comes back as a watch event of that Node. Any
// other Node event may change what a pass would decide (a label edited, a
// Node added), so it makes the next pass of every NodeTagSync full, and a
// full pass lists the cloud once the provider's cache has expired. The
// echo of our own write tells nothing new: the pass that wrote already
// synced that Node. So the controller remembers each write it makes
// (before it is sent: the watch event may come before the answer) and
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

// ownWrites are the Node writes a pass is making or made last, by Node.
// Its zero value is ready.
type ownWrites struct {
	mu     sync.Mutex
	byNode map[string]ownWrite
}

// ownWrite is one Node write: the version it was guarded by and the change.
type ownWrite struct {
	from   string
	update nodeUpdate
}

// expect records a write of u to node, guarded by its version from, before
// it is sent.
func (w *ownWrites) expect(node, from string, u nodeUpdate) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byNode == nil {
		w.byNode = map[string]ownWrite{}
	}
	w.byNode[node] = ownWrite{from: from, update: u}
}

// forget drops the record of node's write: it failed, or the Node is gone.
func (w *ownWrites) forget(node string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byNode, node)
}

// inFlight reports whether version rv of node is the one our last write
// to it replaced: the cache has not shown the write yet.
func (w *ownWrites) inFlight(node, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	write, ok := w.byNode[node]
	return ok && write.from == rv
}

// Len is how many Nodes have a write recorded.
func (w *ownWrites) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byNode)
}

// isEcho reports whether the update of a Node from old to updated is
// exactly the write recorded for it, and forgets the record when it is.
func (w *ownWrites) isEcho(old, updated *cachedNode) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	write, ok := w.byNode[old.Name]
	if !ok || write.from != old.ResourceVersion || !write.update.madeOf(old, updated) {
		return false
	}
	delete(w.byNode, old.Name)
	return true
}

// madeOf reports whether updated is old with u applied, in all the
// controller reads of a Node.
func (u nodeUpdate) madeOf(old, updated *cachedNode) bool {
	wantLabels := maps.Clone(old.Labels)
	if wantLabels == nil {
		wantLabels = map[string]string{}
	}
	maps.Copy(wantLabels, u.labels.Set)
	for _, k := range u.labels.Delete {
		delete(wantLabels, k)
	}
	wantBase, wantTaints := old.Annotations[BaseAnnotation], old.Spec.Taints
	if u.base != "" {
		wantBase = u.base
	}
	if u.taints != nil {
		wantTaints = u.taints
	}
	return maps.Equal(wantLabels, updated.Labels) && wantBase == updated.Annotations[BaseAnnotation] &&
		sameTaints(wantTaints, updated.Spec.Taints) && old.Spec.ProviderID == updated.Spec.ProviderID
}

// ownEcho reports whether a Node update is the echo of one of the
// controller's own writes that changes no NodeTagSync's selection of the
// Node: it needs no pass.
func (r *Reconciler) ownEcho(ctx context.Context, oldObj, newObj any) bool {
	old, ok1 := oldObj.(*cachedNode)
	updated, ok2 := newObj.(*cachedNode)
	if !ok1 || !ok2 || !r.writes.isEcho(old, updated) {
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
