package tags

// RestrictCloud returns r as it stands when only the operations of r.CloudPatch
// that also appear, identically, in applied were written to the cloud (for
// example after Fit or Aggregate dropped some). Every dropped key keeps its old
// base entry in NewBase, so the next merge sees the same situation and proposes
// it again, and a conflict whose winning write was dropped gets Winner SideNone.
func (r MergeResult) RestrictCloud(applied CloudPatch) MergeResult {
	out := r.clone()
	out.CloudPatch = out.restrict(r.CloudPatch, applied, SideNode)
	return out
}

// RestrictNode is RestrictCloud for the Node side: only the operations of
// r.NodePatch that also appear identically in applied were written.
func (r MergeResult) RestrictNode(applied NodePatch) MergeResult {
	out := r.clone()
	out.NodePatch = out.restrict(r.NodePatch, applied, SideCloud)
	return out
}

// restrict returns the operations of p kept by applied and reverts NewBase for
// the others; winner is the side whose conflicts' writes went through p.
func (r *MergeResult) restrict(p, applied Patch, winner Side) Patch {
	var kept Patch
	for _, n := range p.Set.Names() {
		if v, del, ok := applied.Op(r.nc, n); ok && !del && v == p.Set[n] {
			kept.put(n, p.Set[n])
		} else {
			r.revert(n, winner)
		}
	}
	for _, n := range p.Delete {
		if _, del, ok := applied.Op(r.nc, n); ok && del {
			kept.del(n)
		} else {
			r.revert(n, winner)
		}
	}
	kept.normalize()
	return kept
}

// revert restores the old base entry of name and marks a conflict on it, won
// by winner, as unresolved.
func (r *MergeResult) revert(name string, winner Side) {
	r.NewBase.Remove(r.nc, name)
	if n, v, ok := r.base.Lookup(r.nc, name); ok {
		r.NewBase[n] = v
	}
	for i := range r.Conflicts {
		if r.nc.Key(r.Conflicts[i].Name) == r.nc.Key(name) && r.Conflicts[i].Winner == winner {
			r.Conflicts[i].Winner = SideNone
		}
	}
}

func (r MergeResult) clone() MergeResult {
	out := r
	out.NewBase = r.NewBase.Clone()
	if out.NewBase == nil {
		out.NewBase = Set{}
	}
	out.Conflicts = append([]Conflict(nil), r.Conflicts...)
	return out
}
