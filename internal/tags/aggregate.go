package tags

import (
	"maps"
	"slices"
	"sort"
)

// NodeProposal is what one Node's merge wants written to a shared cloud
// resource (a uniform scale set): the Node's name, its CloudPatch and the
// tags it holds.
type NodeProposal struct {
	// Node is the Node's name.
	Node string
	// Patch is the CloudPatch from the Node's MergeResult (empty for a
	// Node that proposes nothing).
	Patch CloudPatch
	// Holds are the Node's synced tags (its labels, decoded and in scope):
	// a Node that holds a tag another Node proposes to delete votes to
	// keep it.
	Holds Set
}

// NodeOp is one Node's proposal for one tag.
type NodeOp struct {
	// Node is the Node's name.
	Node string
	// Value is the proposed value (empty for a delete), or the value a
	// Node that keeps the tag holds.
	Value string
	// Delete is true when the Node proposes deleting the tag.
	Delete bool
	// Keep is true when the Node proposes nothing but holds the tag that
	// others propose to delete.
	Keep bool
}

// AggregateConflict is a tag on which the proposing Nodes disagree.
type AggregateConflict struct {
	// Name is the tag name.
	Name string
	// Ops lists every Node's proposal, sorted by Node name.
	Ops []NodeOp
}

// AggregateResult is the combined write for a shared resource.
type AggregateResult struct {
	// Patch holds the tags all proposing Nodes agree on; write it once.
	Patch CloudPatch
	// Conflicts lists tags the Nodes disagree on, sorted by name; they are not
	// written.
	Conflicts []AggregateConflict
}

// Aggregate combines the proposals of the Nodes that share one cloud resource,
// whose current tags are cloud. A tag goes into the combined Patch only when
// every Node that proposes a change to it proposes the same one (the same
// value, or delete); Nodes that propose nothing for a tag do not vote on it,
// except on a deletion: a Node that still holds the tag votes to keep it, so
// one Node cannot delete a pool's tag — every Node holding it must. Tags the
// voters disagree on (different values, set versus delete, delete versus
// keep) are reported and not written, so there is never a last-writer-wins
// flip-flop.
// Operations that would not change cloud are dropped. Tag names are matched as
// nc says (pass the cloud's, Rules.NameCase). Afterwards each Node should call
// RestrictCloud(result.Patch) on its MergeResult.
func Aggregate(nc NameCase, cloud Set, proposals []NodeProposal) AggregateResult {
	ops, spelling := collectOps(nc, proposals)
	idx := cloud.index(nc)
	var res AggregateResult
	for _, k := range slices.Sorted(maps.Keys(ops)) {
		list := ops[k]
		if !unanimous(list) {
			res.Conflicts = append(res.Conflicts, AggregateConflict{Name: spelling[k], Ops: list})
			continue
		}
		res.Patch.addOp(nc, cloud, idx, spelling[k], list[0])
	}
	res.Patch.normalize()
	return res
}

// collectOps groups the proposals by tag Key, each group sorted by Node, and
// returns the spelling to use for each Key (the first in byte order).
func collectOps(nc NameCase, proposals []NodeProposal) (map[string][]NodeOp, map[string]string) {
	ops := map[string][]NodeOp{}
	spelling := map[string]string{}
	add := func(name string, op NodeOp) {
		k := nc.Key(name)
		ops[k] = append(ops[k], op)
		if cur, ok := spelling[k]; !ok || name < cur {
			spelling[k] = name
		}
	}
	for _, p := range proposals {
		for n, v := range p.Patch.Set {
			add(n, NodeOp{Node: p.Node, Value: v})
		}
		for _, n := range p.Patch.Delete {
			add(n, NodeOp{Node: p.Node, Delete: true})
		}
	}
	for k, list := range ops {
		if slices.ContainsFunc(list, func(op NodeOp) bool { return op.Delete }) {
			ops[k] = append(list, keepers(nc, spelling[k], list, proposals)...)
		}
	}
	for _, list := range ops {
		sort.Slice(list, func(i, j int) bool { return lessOp(list[i], list[j]) })
	}
	return ops, spelling
}

// keepers are the keep votes on tag name of the proposals that propose
// nothing for it and hold it.
func keepers(nc NameCase, name string, list []NodeOp, proposals []NodeProposal) []NodeOp {
	var out []NodeOp
	for _, p := range proposals {
		if slices.ContainsFunc(list, func(op NodeOp) bool { return op.Node == p.Node }) {
			continue
		}
		if v, ok := p.Holds.Get(nc, name); ok {
			out = append(out, NodeOp{Node: p.Node, Value: v, Keep: true})
		}
	}
	return out
}

func lessOp(a, b NodeOp) bool {
	if a.Node != b.Node {
		return a.Node < b.Node
	}
	if a.Delete != b.Delete {
		return !a.Delete
	}
	return a.Value < b.Value
}

func unanimous(list []NodeOp) bool {
	for _, op := range list[1:] {
		if op.Delete != list[0].Delete || op.Value != list[0].Value || op.Keep || list[0].Keep {
			return false
		}
	}
	return true
}

// addOp adds op for name to p unless it would not change cloud; an existing
// tag keeps the cloud's spelling.
func (p *Patch) addOp(nc NameCase, cloud Set, idx map[string]string, name string, op NodeOp) {
	cur, exists := idx[nc.Key(name)]
	switch {
	case op.Delete && exists:
		p.del(cur)
	case op.Delete:
	case exists && cloud[cur] == op.Value:
	case exists:
		p.put(cur, op.Value)
	default:
		p.put(name, op.Value)
	}
}
