package tags

import "fmt"

// state is one side's view of one key.
type state struct {
	name, value string
	ok          bool
}

func stateOf(s Set, idx map[string]string, key string) state {
	n, ok := idx[key]
	if !ok {
		return state{}
	}
	return state{name: n, value: s[n], ok: true}
}

// same reports whether two states hold the same tag value (or are both absent).
func (a state) same(b state) bool { return a.ok == b.ok && (!a.ok || a.value == b.value) }

// put records st in s, replacing any other entry nc takes for its name.
func (s Set) put(nc NameCase, st state) {
	if st.ok {
		s.Put(nc, st.name, st.value)
	}
}

// triple is one key seen from the base and both sides, and the side the
// key came from (SideNone: not known).
type triple struct {
	base, cloud, node state
	history           bool
	from              Side
	person            bool // the cloud's latest change was a person's
}

// lost reports whether side s no longer holds a tag the base holds.
func (t triple) lost(s Side) bool { return t.history && t.base.ok && !t.on(s).ok }

func (t triple) on(s Side) state {
	if s == SideCloud {
		return t.cloud
	}
	return t.node
}

// decision is what to do with one key.
type decision struct {
	agreed   bool      // both sides hold the same state
	from     Side      // the side whose state is written to the other one
	conflict *Conflict // set when the key is in conflict
	// restored: the cloud lost a tag that did not come from it, which is
	// put back; unclear: the Node lost a tag that did not come from it,
	// whose deletion waits for a person.
	restored, unclear bool
}

// decide applies the merge rules to one key.
func decide(t triple, dir Direction, pol Policy) decision {
	if t.cloud.same(t.node) {
		return decision{agreed: true}
	}
	changed, reason := t.changed()
	if changed != SideNone {
		if dir.writes(changed.other()) {
			return t.byIntent(changed, dir)
		}
		if t.unsyncedAddition(changed) {
			return decision{} // never synced, never deleted: left alone
		}
		reason = fmt.Sprintf("changed on the %s only, but direction %s does not write the %s", changed, dir, changed.other())
	}
	winner := pol.winner()
	if !dir.writes(winner.other()) {
		winner = SideNone
	}
	return decision{from: winner, conflict: t.conflict(winner, reason)}
}

// byIntent is the decision for a key only side s changed, when the other
// side may be written. In TwoWay a disappearance crosses over only from
// the side the key came from: the cloud losing a tag that came from the
// Nodes (or from neither knowingly) is a platform's rewrite, put back; a
// Node losing a tag that did not come from the Nodes is deleted only once
// a person approves (unclear). A removal the cloud attributes to a person
// is theirs to make. Every other change crosses over.
func (t triple) byIntent(s Side, dir Direction) decision {
	if !dir.isTwoWay() || !t.lost(s) || t.from == s || (s == SideCloud && t.person) {
		return decision{from: s}
	}
	if s == SideCloud {
		return decision{from: SideNode, restored: true}
	}
	return decision{from: SideNode, unclear: true}
}

// changed returns the one side that changed since the base, or SideNone with a
// reason when both did. Without history, the side that has the tag "changed".
func (t triple) changed() (Side, string) {
	if !t.history {
		switch {
		case !t.cloud.ok:
			return SideNode, ""
		case !t.node.ok:
			return SideCloud, ""
		}
		return SideNone, "no sync history and the values differ"
	}
	cloud, node := !t.cloud.same(t.base), !t.node.same(t.base)
	switch {
	case cloud && node:
		return SideNone, "changed differently on both sides since the last sync"
	case cloud:
		return SideCloud, ""
	}
	return SideNode, ""
}

// unsyncedAddition reports whether side s holds a tag that neither the base nor
// the other side has: something never synced, which is left alone.
func (t triple) unsyncedAddition(s Side) bool {
	return !t.base.ok && t.on(s).ok && !t.on(s.other()).ok
}

func (t triple) conflict(winner Side, reason string) *Conflict {
	name := t.cloud.name
	if !t.cloud.ok {
		name = t.node.name
	}
	return &Conflict{
		Name:       name,
		CloudValue: t.cloud.value, CloudPresent: t.cloud.ok,
		NodeValue: t.node.value, NodePresent: t.node.ok,
		BaseValue: t.base.value, BasePresent: t.base.ok,
		Winner: winner, Reason: reason,
	}
}

// apply records decision d for key t in r.
func (r *MergeResult) apply(t triple, d decision, dir Direction) {
	if d.conflict != nil {
		r.Conflicts = append(r.Conflicts, *d.conflict)
	}
	switch {
	case d.agreed:
		r.agree(t, dir)
	case d.from == SideCloud:
		r.toNode(t)
	case d.from == SideNode:
		r.toCloud(t)
		r.rename(t, dir)
	default:
		r.NewBase.put(r.nc, t.base)
	}
	switch {
	case d.restored:
		r.Restored = append(r.Restored, t.node.name)
	case d.unclear:
		r.Unclear = append(r.Unclear, t.cloud.name)
	case d.from != SideNone && d.conflict == nil && !t.base.ok && t.from == SideNone:
		r.from[r.nc.Key(firstName(t.cloud.name, t.node.name))] = d.from // first copied across
	}
}

// agree records an agreed key under the cloud's spelling.
func (r *MergeResult) agree(t triple, dir Direction) {
	if t.cloud.ok {
		r.NewBase.put(r.nc, t.cloud)
		r.rename(t, dir)
	}
}

// rename renames the Node's label to the cloud's spelling when both hold the
// tag under different spellings and the Node may be written; the Node's value
// is kept (it is, or is being written as, the cloud's value).
func (r *MergeResult) rename(t triple, dir Direction) {
	if t.cloud.ok && t.node.ok && t.node.name != t.cloud.name && dir.writes(SideNode) {
		r.NodePatch.put(t.cloud.name, t.node.value)
	}
}

// toNode writes the cloud's state of t to the Node.
func (r *MergeResult) toNode(t triple) {
	if !t.cloud.ok {
		r.NodePatch.del(t.node.name)
		return
	}
	r.NodePatch.put(t.cloud.name, t.cloud.value)
	r.NewBase.put(r.nc, t.cloud)
}

// toCloud writes the Node's state of t to the cloud, keeping the cloud's
// spelling of an existing tag.
func (r *MergeResult) toCloud(t triple) {
	if !t.node.ok {
		r.CloudPatch.del(t.cloud.name)
		return
	}
	st := t.node
	if t.cloud.ok {
		st.name = t.cloud.name
	}
	r.CloudPatch.put(st.name, st.value)
	r.NewBase.put(r.nc, st)
}
