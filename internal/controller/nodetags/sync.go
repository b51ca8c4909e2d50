package nodetags

import (
	"slices"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// member is one managed Node in a sync pass, with its side of the merge.
type member struct {
	node *cachedNode
	// stored is the Node's stored base as read (its Origin, Legacy and
	// Former); hasBase is false when there is none.
	stored  tags.Base
	hasBase bool
	// base and baseTaints are the stored base's tags in scope, split into
	// label tags and taint tags (syncTaints); mergeBases decides whether
	// they are a base for this pass's configuration.
	base       tags.Set
	baseTaints tags.Set
	baseText   string   // the annotation as found
	nodeTags   tags.Set // managed labels decoded, filtered
	taintTags  tags.Set // the node's taints as tags (syncTaints)
	skipped    []tags.Skipped
	note       string // placement note (e.g. a fallback to the scale set)
}

// newMember decodes a Node's managed labels and stored base.
func newMember(cfg syncConfig, node *cachedNode, note string) (*member, error) {
	m := &member{node: node, baseText: node.Annotations[BaseAnnotation], note: note}
	stored, ok, err := readBase(node)
	if ok {
		rest, taints := tags.SplitTaintTags(cfg.nameCase(), stored.Tags)
		m.stored, m.hasBase = stored, true
		m.base = cfg.filter.Apply(cfg.nameCase(), orEmpty(rest))
		if cfg.syncTaints {
			m.baseTaints = orEmpty(taints)
		}
	}
	if cfg.syncTaints {
		m.taintTags = taintTags(node)
	}
	decoded, skipped := cfg.codec.FromLabels(node.Labels)
	m.nodeTags = cfg.filter.Apply(cfg.nameCase(), decoded)
	m.skipped = skipped
	return m, err
}

// mergeBases are the member's merge bases (labels, taints) under the
// pass's configuration, given the cloud's tags and taint tags in scope:
// the stored ones when the same configuration made them, none (nil) when
// another did, and a legacy base's entries both sides still hold (see
// tags.Base.For).
func (m *member) mergeBases(cfg syncConfig, cloudTags, cloudTaints tags.Set) (labels, taints tags.Set) {
	if !m.hasBase {
		return nil, nil
	}
	nc := cfg.nameCase()
	b := m.stored
	b.Tags = m.base
	labels, _ = b.For(cfg.origin, nc, cloudTags, m.nodeTags)
	if cfg.syncTaints {
		b.Tags = m.baseTaints
		taints, _ = b.For(cfg.origin, nc, orEmpty(cloudTaints), orEmpty(m.taintTags))
	}
	return labels, taints
}

// former are the labels the member still carries under an earlier label
// prefix: those of its stored base when that base was made under another
// prefix, else those its base still lists (nil: none).
func (m *member) former(cfg syncConfig) *tags.Former {
	switch {
	case !m.hasBase || m.stored.Legacy:
		return nil
	case m.stored.Origin.Prefix != cfg.origin.Prefix:
		rest, _ := tags.SplitTaintTags(cfg.nameCase(), m.stored.Tags)
		if len(rest) == 0 {
			return nil
		}
		return &tags.Former{Prefix: m.stored.Origin.Prefix, Tags: rest}
	case m.stored.Former != nil && m.stored.Former.Prefix != cfg.origin.Prefix:
		return m.stored.Former
	}
	return nil
}

// resourcePlan is what a pass decided for one cloud resource and the Nodes
// that sync with it.
type resourcePlan struct {
	resource cloud.Resource
	members  []*member
	// results are the members' merges, in members' order (final after
	// finish).
	results []memberMerge
	// proposed is the cloud write decide chose (aggregated, fitted).
	proposed tags.Patch
	// cloudSkipped are cloud tags that cannot become labels.
	cloudSkipped []tags.Skipped
	// limitSkipped are writes the cloud's rules refused (limit, reserved).
	limitSkipped []tags.Skipped
	// aggConflicts are tags the Nodes of a shared resource disagree on.
	aggConflicts []tags.AggregateConflict
	// wiped is true when the cloud's tags were rewritten wholesale.
	wiped bool
	// withheld is true when the pass kept part of proposed back (hold.go):
	// the resource's Nodes are then not steady, so the next pass decides
	// again (and sees an approval).
	withheld bool
	// writeErr is the cloud write's error, if it failed.
	writeErr error
	// wrote is true when the cloud was written; written is what.
	wrote   bool
	written tags.Patch
}

// decide is the pure first half of a resource's sync: every member merged
// with the resource's tags, their cloud proposals aggregated (a scale set's
// Nodes must agree) and fitted to the cloud's rules. plan.proposed is the
// cloud write; with nothing to write, the plan is final after finish.
func decide(cfg syncConfig, res cloud.Resource, members []*member) resourcePlan {
	plan := resourcePlan{resource: res, members: members}
	plan.results = mergeAll(cfg, res, members, &plan)
	patch := aggregate(cfg, res, members, plan.results, &plan)
	plan.proposed, plan.limitSkipped = tags.Fit(res.Tags, patch, cfg.rules)
	return plan
}

// settle records the cloud write's outcome: on success the members are
// merged again against written, the resource's tags after the write.
func (plan *resourcePlan) settle(cfg syncConfig, written cloud.Resource, err error) {
	if err != nil {
		plan.writeErr = err
		return
	}
	plan.wrote, plan.written = true, plan.proposed
	plan.resource = written
	plan.results = mergeAll(cfg, written, plan.members, plan)
}

// finish keeps, for whatever cloud change is still proposed (not written: a
// disagreement, a limit, a failure), the members' bases so it is retried.
func (plan *resourcePlan) finish() {
	for i, res := range plan.results {
		plan.results[i] = res.unwritten()
	}
}

// untroubled reports whether the plan wrote nothing to the cloud and found
// nothing to report about the resource: its nodes may then be steady.
func (plan resourcePlan) untroubled() bool {
	return !plan.wrote && plan.writeErr == nil && !plan.wiped && !plan.withheld && len(plan.cloudSkipped) == 0 &&
		len(plan.limitSkipped) == 0 && len(plan.aggConflicts) == 0
}

// mergeAll runs the three-way merge for every member against res's tags:
// labels both ways as configured, and (syncTaints) the node's taints one way
// to the cloud.
func mergeAll(cfg syncConfig, res cloud.Resource, members []*member, plan *resourcePlan) []memberMerge {
	cloudTags, cloudTaints := res.Tags, tags.Set(nil)
	if cfg.syncTaints {
		cloudTags, cloudTaints = tags.SplitTaintTags(cfg.nameCase(), res.Tags)
	}
	cloudTags = cfg.filter.Apply(cfg.nameCase(), orEmpty(cloudTags))
	_, plan.cloudSkipped = cfg.codec.ToLabels(cloudTags)
	cloudHold := tags.SkippedNames(plan.cloudSkipped)
	results := make([]memberMerge, len(members))
	for i, m := range members {
		base, baseTaints := m.mergeBases(cfg, cloudTags, cloudTaints)
		results[i].labels = tags.Merge(cfg.nameCase(), tags.MergeInput{
			Base:      base,
			Cloud:     cloudTags,
			Node:      m.nodeTags,
			Direction: cfg.direction,
			Policy:    cfg.policy,
			Hold:      append(slices.Clone(cloudHold), tags.SkippedNames(m.skipped)...),
		})
		if cfg.syncTaints {
			results[i].taints = tags.Merge(cfg.nameCase(), tags.MergeInput{
				Base: baseTaints, Cloud: orEmpty(cloudTaints), Node: orEmpty(m.taintTags),
				Direction: tags.NodeToCloud, Policy: tags.NodeWins,
			})
		}
		plan.wiped = plan.wiped || results[i].labels.Wiped
	}
	return results
}

// memberMerge is one member's merge: its labels and, with syncTaints, its
// taints (whose names never overlap: taint tags carry TaintTagPrefix).
type memberMerge struct {
	labels tags.MergeResult
	taints tags.MergeResult
}

// cloudPatch is everything the member proposes for the cloud.
func (mm memberMerge) cloudPatch() tags.Patch {
	p := mm.labels.CloudPatch
	t := mm.taints.CloudPatch
	if t.IsEmpty() {
		return p
	}
	out := tags.Patch{Set: p.Set.Clone(), Delete: append(slices.Clone(p.Delete), t.Delete...)}
	for k, v := range t.Set {
		if out.Set == nil {
			out.Set = tags.Set{}
		}
		out.Set[k] = v
	}
	slices.Sort(out.Delete)
	return out
}

// unwritten keeps the bases of cloud changes that were not written.
func (mm memberMerge) unwritten() memberMerge {
	return memberMerge{labels: mm.labels.RestrictCloud(tags.Patch{}), taints: mm.taints.RestrictCloud(tags.Patch{})}
}

// conflicts lists both merges' conflicts.
func (mm memberMerge) conflicts() []tags.Conflict {
	return append(slices.Clone(mm.labels.Conflicts), mm.taints.Conflicts...)
}

func orEmpty(s tags.Set) tags.Set {
	if s == nil {
		return tags.Set{}
	}
	return s
}

// taintTags renders a node's taints as tags.
func taintTags(node *cachedNode) tags.Set {
	taints := make([]tags.Taint, 0, len(node.Spec.Taints))
	for _, t := range node.Spec.Taints {
		if !kit.IsTaint(t, PendingTaintKey) { // tagsync's own, gone once synced
			taints = append(taints, tags.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
		}
	}
	return tags.TaintTags(taints)
}

// aggregate combines the members' cloud proposals into one patch; for a
// resource shared by several Nodes, disagreeing proposals are conflicts and
// are not written.
func aggregate(cfg syncConfig, res cloud.Resource, members []*member, results []memberMerge, plan *resourcePlan) tags.Patch {
	var proposals []tags.NodeProposal
	for i, r := range results {
		if p := r.cloudPatch(); !p.IsEmpty() {
			proposals = append(proposals, tags.NodeProposal{Node: members[i].node.Name, Patch: p})
		}
	}
	if len(proposals) == 0 {
		return tags.Patch{}
	}
	agg := tags.Aggregate(cfg.nameCase(), res.Tags, proposals)
	plan.aggConflicts = agg.Conflicts
	return agg.Patch
}

// nodeUpdateFor turns a member's final merge into the Node change: the label
// edits (under deletionPolicy Retain without deletions, which it returns as
// retained), the removal of labels moved from an earlier prefix, and, when
// it changed, the new base.
func nodeUpdateFor(cfg syncConfig, m *member, mm memberMerge) (nodeUpdate, []tags.Skipped) {
	result := mm.labels
	var retained []string
	if cfg.retain && len(result.NodePatch.Delete) > 0 {
		retained = result.NodePatch.Delete
		result = result.RestrictNode(tags.Patch{Set: result.NodePatch.Set})
	}
	changes, skipped := cfg.codec.LabelChanges(m.node.Labels, result.NodePatch)
	if len(skipped) > 0 {
		result = result.RestrictNode(withoutNames(cfg.nameCase(), result.NodePatch, tags.SkippedNames(skipped)))
	}
	base := result.NewBase.Clone()
	for k, v := range mm.taints.NewBase {
		if base == nil {
			base = tags.Set{}
		}
		base[k] = v
	}
	former := m.former(cfg)
	if cfg.direction.WritesNodes() && !cfg.retain {
		changes, former = moveLabels(cfg, m.node.Labels, changes, former)
	}
	u := nodeUpdate{labels: changes, retained: retained}
	if text := (tags.Base{Origin: cfg.origin, Tags: base, Former: former}).Encode(); text != m.baseText {
		u.base = text
	}
	return u, skipped
}

// moveLabels adds to changes the removal of each label former lists whose
// tag now has its label under the current prefix (already there, or set by
// changes), and returns what is still to be moved (nil: nothing). A former
// label that is gone, or that someone changed since tagsync wrote it, is no
// longer tagsync's: it is left alone and forgotten.
func moveLabels(cfg syncConfig, labels map[string]string, changes tags.LabelChanges, former *tags.Former) (tags.LabelChanges, *tags.Former) {
	if former == nil {
		return changes, nil
	}
	old := tags.Codec{Prefix: former.Prefix, Rules: &cfg.rules}
	left := tags.Set{}
	for _, name := range former.Tags.Names() {
		written, _ := old.ToLabels(tags.Set{name: former.Tags[name]})
		for key, value := range written {
			if labels[key] != value || cfg.codec.IsManaged(key) {
				continue
			}
			if hasLabelAfter(cfg, labels, changes, name) {
				changes.Delete = append(changes.Delete, key)
			} else {
				left[name] = former.Tags[name]
			}
		}
	}
	slices.Sort(changes.Delete)
	if len(left) == 0 {
		return changes, nil
	}
	return changes, &tags.Former{Prefix: former.Prefix, Tags: left}
}

// hasLabelAfter reports whether the Node carries tag name's label under
// the current prefix once changes are applied.
func hasLabelAfter(cfg syncConfig, labels map[string]string, changes tags.LabelChanges, name string) bool {
	key, err := cfg.codec.LabelKey(name)
	if err != nil {
		return false
	}
	if _, ok := changes.Set[key]; ok {
		return true
	}
	_, ok := labels[key]
	return ok && !slices.Contains(changes.Delete, key)
}

// withoutNames returns p without operations on the given names (matched as nc
// says).
func withoutNames(nc tags.NameCase, p tags.Patch, names []string) tags.Patch {
	drop := map[string]bool{}
	for _, n := range names {
		drop[nc.Key(n)] = true
	}
	out := tags.Patch{}
	for k, v := range p.Set {
		if !drop[nc.Key(k)] {
			if out.Set == nil {
				out.Set = tags.Set{}
			}
			out.Set[k] = v
		}
	}
	for _, k := range p.Delete {
		if !drop[nc.Key(k)] {
			out.Delete = append(out.Delete, k)
		}
	}
	return out
}
