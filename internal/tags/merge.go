package tags

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Direction says which sides a merge may write.
type Direction string

const (
	// TwoWay writes both sides (the default; the empty Direction means TwoWay).
	TwoWay Direction = "TwoWay"
	// CloudToNode writes only Node labels; the cloud is never written.
	CloudToNode Direction = "CloudToNode"
	// NodeToCloud writes only cloud tags; Nodes are never written.
	NodeToCloud Direction = "NodeToCloud"
)

// Validate returns an error for an unknown Direction. Merge writes neither side
// for an unknown Direction.
func (d Direction) Validate() error {
	return oneOf("sync direction", d, TwoWay, CloudToNode, NodeToCloud)
}

// writes reports whether d may write side s.
func (d Direction) writes(s Side) bool {
	switch d {
	case "", TwoWay:
		return s != SideNone
	case CloudToNode:
		return s == SideNode
	case NodeToCloud:
		return s == SideCloud
	}
	return false
}

// isTwoWay reports whether d writes both sides.
func (d Direction) isTwoWay() bool { return d == "" || d == TwoWay }

// WritesNodes reports whether d writes Node labels.
func (d Direction) WritesNodes() bool { return d.writes(SideNode) }

// WritesCloud reports whether d writes cloud tags.
func (d Direction) WritesCloud() bool { return d.writes(SideCloud) }

func (d Direction) String() string {
	if d == "" {
		return string(TwoWay)
	}
	return string(d)
}

// Policy says how a conflict is resolved.
type Policy string

const (
	// Ignore leaves both sides of a conflict as they are and reports it (the
	// default; the empty Policy means Ignore).
	Ignore Policy = "Ignore"
	// CloudWins writes the cloud's state to the Node.
	CloudWins Policy = "CloudWins"
	// NodeWins writes the Node's state to the cloud.
	NodeWins Policy = "NodeWins"
)

// Validate returns an error for an unknown Policy. Merge treats an unknown
// Policy as Ignore.
func (p Policy) Validate() error {
	return oneOf("conflict policy", p, Ignore, CloudWins, NodeWins)
}

// oneOf returns an error naming what and the choices unless v is empty (the
// default) or one of them.
func oneOf[T ~string](what string, v T, choices ...T) error {
	if v == "" || slices.Contains(choices, v) {
		return nil
	}
	names := make([]string, len(choices))
	for i, c := range choices {
		names[i] = string(c)
	}
	last := len(names) - 1
	return fmt.Errorf("unknown %s %q: use %s or %s", what, string(v), strings.Join(names[:last], ", "), names[last])
}

// winner returns the side whose state p propagates.
func (p Policy) winner() Side {
	switch p {
	case CloudWins:
		return SideCloud
	case NodeWins:
		return SideNode
	}
	return SideNone
}

// Side names one side of a sync.
type Side int

const (
	// SideNone is neither side.
	SideNone Side = iota
	// SideCloud is the cloud resource's tags.
	SideCloud
	// SideNode is the Node's managed labels.
	SideNode
)

// String returns "none", "cloud" or "node".
func (s Side) String() string {
	switch s {
	case SideCloud:
		return "cloud"
	case SideNode:
		return "node"
	}
	return "none"
}

func (s Side) other() Side {
	switch s {
	case SideCloud:
		return SideNode
	case SideNode:
		return SideCloud
	}
	return SideNone
}

// MergeInput is one Node's view of a sync: its history and both current sides.
type MergeInput struct {
	// Base is the last set both sides agreed on (the previous NewBase); nil
	// means there is no history (a new Node), which makes the merge a union
	// that never deletes.
	Base Set
	// Cloud holds the cloud tags in scope (already filtered).
	Cloud Set
	// Node holds the Node's managed labels decoded to tags (see FromLabels).
	Node Set
	// Direction restricts which side may be written.
	Direction Direction
	// Policy resolves conflicts.
	Policy Policy
	// From records which side each base tag came from (Base.From, or
	// Combine of several Nodes' for a shared resource). In TwoWay it decides
	// what a disappearance means: see the package documentation, "Deletions
	// only by intent".
	From Sources
	// RemovedByPerson is set when the cloud names a person as the writer
	// of the resource's latest change (an event's claims): the tags the
	// cloud lost are then a person's deletions, which cross over whatever
	// side they came from.
	RemovedByPerson bool
	// Hold names tags Merge must not touch on either side; their base entries
	// carry over unchanged. Pass SkippedNames of the Skipped from ToLabels (of
	// the cloud tags) and FromLabels: a tag that cannot be carried across must
	// not look deleted on the side where it is missing.
	Hold []string
}

// MergeResult is what Merge decided.
type MergeResult struct {
	// CloudPatch holds the changes to write to the cloud; only changed keys.
	CloudPatch CloudPatch
	// NodePatch holds the changes to write to the Node; only changed keys.
	NodePatch NodePatch
	// Conflicts lists keys changed differently on both sides (or, in a one-way
	// Direction, changed on the side that is not written), sorted by name.
	Conflicts []Conflict
	// NewBase is what both sides agree on once both patches are applied;
	// store it as the next Base. Keys left in conflict keep their old entry.
	NewBase Set
	// Wiped reports a wholesale rewrite of the cloud tags: Base holds at least
	// two tags, the cloud none of them, and the Node still holds at least two
	// of them unchanged (so the usual rules would delete those labels). When
	// the Direction writes the Node, the merge then proceeds as if there were
	// no history: nothing is deleted because of the wipe.
	Wiped bool
	// Restored names the tags the cloud lost that came from the Nodes (or
	// from neither knowingly): a platform's rewrite, which CloudPatch puts
	// back instead of deleting the labels. Sorted.
	Restored []string
	// Unclear names the deletions in CloudPatch of tags the Nodes lost that
	// did not come from the Nodes: a person must approve them before they
	// are written. Sorted.
	Unclear []string

	base Set             // the base the merge used (nil after a wipe), for Restrict*
	nc   NameCase        // how the merge matched names, for Restrict*
	from map[string]Side // each tag's source, by nc.Key (see From)
}

// From returns the source of each tag in NewBase that has a known one:
// the input's, or, for a tag this merge copied across for the first time,
// the side it was copied from. Store it with NewBase.
func (r MergeResult) From() Sources {
	var out Sources
	for name := range r.NewBase {
		if side := r.from[r.nc.Key(name)]; side != SideNone {
			if out == nil {
				out = Sources{}
			}
			out[name] = side
		}
	}
	return out
}

// Conflict is a key on which the sides disagree and could not both be followed.
type Conflict struct {
	// Name is the tag name (the cloud's spelling when it has one).
	Name string
	// CloudValue is the cloud's value; CloudPresent says whether it has the tag.
	CloudValue   string
	CloudPresent bool
	// NodeValue is the Node's value; NodePresent says whether it has the tag.
	NodeValue   string
	NodePresent bool
	// BaseValue is the last agreed value; BasePresent says whether there was one.
	BaseValue   string
	BasePresent bool
	// Winner is the side whose state was written to the other side, or
	// SideNone when both were left as they are.
	Winner Side
	// Reason says why this is a conflict.
	Reason string
}

// Merge performs the three-way merge of one Node's tags, matching tag names as
// nc says (pass the cloud's, Rules.NameCase); see the package documentation
// for the rules.
func Merge(nc NameCase, in MergeInput) MergeResult {
	res := MergeResult{NewBase: Set{}, Wiped: isWipe(nc, in.Base, in.Cloud, in.Node), nc: nc, from: map[string]Side{}}
	res.base = in.Base.Clone()
	if res.Wiped && in.Direction.writes(SideNode) {
		res.base = nil
	}
	bi, ci, ni := res.base.index(nc), in.Cloud.index(nc), in.Node.index(nc)
	hold := keySet(nc, in.Hold)
	for _, k := range unionKeys(bi, ci, ni) {
		t := triple{
			base: stateOf(res.base, bi, k), cloud: stateOf(in.Cloud, ci, k), node: stateOf(in.Node, ni, k),
			history: res.base != nil, from: in.From.Source(nc, firstName(bi[k], ci[k], ni[k])), person: in.RemovedByPerson,
		}
		res.from[k] = t.from
		if hold[k] {
			res.NewBase.put(nc, t.base)
			continue
		}
		res.apply(t, decide(t, in.Direction, in.Policy), in.Direction)
	}
	res.normalize()
	return res
}

// isWipe reports whether base holds at least two tags, cloud none of them, and
// node at least two of them with their base values.
func isWipe(nc NameCase, base, cloud, node Set) bool {
	idx := base.index(nc)
	if len(idx) < 2 {
		return false
	}
	for k := range cloud.index(nc) {
		if _, ok := idx[k]; ok {
			return false
		}
	}
	unchanged := 0
	for _, n := range idx {
		if v, ok := node.Get(nc, n); ok && v == base[n] {
			unchanged++
		}
	}
	return unchanged >= 2
}

// firstName is the first non-empty of names.
func firstName(names ...string) string {
	for _, n := range names {
		if n != "" {
			return n
		}
	}
	return ""
}

func (r *MergeResult) normalize() {
	r.CloudPatch.normalize()
	r.NodePatch.normalize()
	sort.Strings(r.Restored)
	sort.Strings(r.Unclear)
	sort.Slice(r.Conflicts, func(i, j int) bool { return r.nc.Key(r.Conflicts[i].Name) < r.nc.Key(r.Conflicts[j].Name) })
}

func keySet(nc NameCase, names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[nc.Key(n)] = true
	}
	return m
}

func unionKeys(idx ...map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range idx {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}
