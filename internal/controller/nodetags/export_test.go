package nodetags

// Tracked reports how many NodeTagSyncs and Nodes the reconciler keeps
// bookkeeping for, so tests can check that deleted objects are forgotten.
func (r *Reconciler) Tracked() (syncs, nodes int) {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.syncs), len(r.pending)
}

// NotePending records a write in flight for a node, as a Node write does.
func (r *Reconciler) NotePending(name, rv string) { r.notePending(name, rv) }
