package nodetags

// Tracked reports how many NodeTagSyncs and Nodes the reconciler keeps
// bookkeeping for, so tests can check that deleted objects are forgotten.
func (r *Reconciler) Tracked() (syncs, nodes int) {
	r.init()
	return r.syncs.Len(), r.writes.Len()
}

// NotePending records a write in flight for a node, as a Node write does.
func (r *Reconciler) NotePending(name, rv string) { r.writes.Mark(name, rv) }

// Steady is how many of a NodeTagSync's nodes its last pass found steady
// (in sync and unchanged, so the next pass skips their merge).
func (r *Reconciler) Steady(name string) int {
	st, ok := r.syncs.Get(name)
	if !ok {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(st.steady)
}

// ReadsInformerStore reports whether passes read Nodes from the informer's
// store (shared pointers) rather than copies through the client.
func (r *Reconciler) ReadsInformerStore() bool { return r.nodes.store != nil }

// Targetable reports whether a cloud change for the NodeTagSync would now
// run a targeted pass: its last full pass succeeded and no Node changed
// since.
func (r *Reconciler) Targetable(name string) bool {
	st, ok := r.syncs.Get(name)
	if !ok {
		return false
	}
	epoch := r.changes.currentEpoch()
	r.mu.Lock()
	defer r.mu.Unlock()
	return st.lastStatus != nil && st.fullEpoch == epoch
}

// EchoExpected reports whether a Node write of the controller waits for its
// watch event to be recognised as its echo.
func (r *Reconciler) EchoExpected(node string) bool {
	return r.writes.Has(node)
}

// NewLeader forgets what the reconciler keeps in memory of a NodeTagSync,
// as a new leader (or a restarted controller) starts without it: its next
// pass starts from the object's status.
func (r *Reconciler) NewLeader(name string) { r.syncs.Forget(name) }
