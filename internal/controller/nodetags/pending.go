package nodetags

// The informer cache sees the controller's own Node writes a moment after
// they are made, and those writes trigger the next pass. A pass that read a
// Node at the version it had before our write would redo the same change and
// be refused (409 Conflict). pendingWrites remembers, per Node, the version
// our last write replaced; until the cache shows a newer one the Node is left
// out of passes (its write is in flight, not lost: the watch event of that
// write triggers the pass that sees it).

// notePending records that our write replaced version rv of the node.
func (r *Reconciler) notePending(name, rv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending[name] = rv
}

// stale reports whether node is the version our last write replaced; when
// the cache has caught up it forgets the write.
func (r *Reconciler) stale(node *cachedNode) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	rv, ok := r.pending[node.Name]
	if !ok {
		return false
	}
	if rv == node.ResourceVersion {
		return true
	}
	delete(r.pending, node.Name)
	return false
}

// forgetNode drops what the controller remembers about a deleted Node.
func (r *Reconciler) forgetNode(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, name)
}
