package nodetags

import (
	"slices"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

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
			Base:  base,
			Cloud: cloudTags,
			Node:  m.nodeTags,
			From:  plan.from,
			// A person's removal crosses over whatever side the tag came from.
			RemovedByPerson: plan.person != "",
			Direction:       cfg.direction,
			Policy:          cfg.policy,
			Hold:            append(slices.Clone(cloudHold), tags.SkippedNames(m.skipped)...),
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
		if !kit.IsTaint(t, v1alpha1.NodeTagsPendingTaintKey) { // tagsync's own, gone once synced
			taints = append(taints, tags.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
		}
	}
	return tags.TaintTags(taints)
}

// aggregate combines the members' cloud proposals into one patch; for a
// resource shared by several Nodes, disagreeing proposals are conflicts and
// are not written.
func aggregate(cfg syncConfig, res cloud.Resource, members []*member, results []memberMerge, plan *resourcePlan) tags.Patch {
	proposals := make([]tags.NodeProposal, len(results))
	proposing := false
	for i, r := range results {
		p := r.cloudPatch()
		proposing = proposing || !p.IsEmpty()
		proposals[i] = tags.NodeProposal{Node: members[i].node.Name, Patch: p, Holds: members[i].nodeTags}
	}
	if !proposing {
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
	u := nodeUpdate{NodeUpdate: kit.NodeUpdate{Labels: changes, Retained: retained}}
	if text := (tags.Base{Origin: m.origin(cfg), Tags: base, From: result.From(), Former: former}).Encode(); text != m.baseText {
		u.Record = text
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

// memberUpdate is the whole change a pass makes to a member's Node: the
// label edits and new base of its final merge, and the pending taint's
// removal.
func memberUpdate(cfg syncConfig, m *member, mm memberMerge) (nodeUpdate, []tags.Skipped) {
	u, skipped := nodeUpdateFor(cfg, m, mm)
	u.Taints = kit.ReleaseTaint(m.node.Spec.Taints, v1alpha1.NodeTagsPendingTaintKey)
	if u.Record != "" {
		u.baseOnly = baseOnlyFor(cfg, m, mm)
	}
	return u, skipped
}

// baseOnlyFor is the base annotation for a Node whose label changes cannot
// be written (it changed since the pass read it: Conflict). It records the
// cloud writes the pass made from the Node's labels and none of the label
// changes, so that the next pass, reading the changed Node, proposes those
// again and takes a person's edit made meanwhile for the Node's: without
// it, the tag the pass just wrote and the label edited after the read
// would look like two sides changed, a conflict that stays ("" when the
// annotation would not change).
func baseOnlyFor(cfg syncConfig, m *member, mm memberMerge) string {
	labels := mm.labels.RestrictNode(tags.Patch{})
	base := labels.NewBase.Clone()
	for k, v := range mm.taints.NewBase {
		if base == nil {
			base = tags.Set{}
		}
		base[k] = v
	}
	text := tags.Base{Origin: m.origin(cfg), Tags: base, From: labels.From(), Former: m.former(cfg)}.Encode()
	if text == m.baseText {
		return ""
	}
	return text
}

// A node that a pass found fully in sync (nothing to write on either side,
// no conflict, nothing unrepresentable) stays in sync while neither the
// Node, nor its resource's tags, nor the NodeTagSync's spec change. The next
// pass then counts it as synced without decoding its labels or merging: at
// 10,000 nodes most of a resync's work and allocation.
//
// A steady mark is the node's resourceVersion, a hash of the resource's tags
// and the spec's generation. Each pass keeps only the marks of the nodes it
// saw, so nodes that left (deleted, deselected) are forgotten.
