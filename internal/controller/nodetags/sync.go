package nodetags

import (
	"context"
	"slices"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// member is one managed Node in a sync pass, with its side of the merge.
type member struct {
	node       *cachedNode
	base       tags.Set // nil: no history
	baseTaints tags.Set // the taint tags of base (syncTaints)
	baseText   string   // the annotation as found
	nodeTags   tags.Set // managed labels decoded, filtered
	taintTags  tags.Set // the node's taints as tags (syncTaints)
	skipped    []tags.Skipped
	note       string // placement note (e.g. a fallback to the scale set)
}

// newMember decodes a Node's managed labels and stored base.
func newMember(cfg syncConfig, node *cachedNode, note string) (*member, error) {
	m := &member{node: node, baseText: node.Annotations[BaseAnnotation], note: note}
	base, err := readBase(node)
	if base != nil {
		rest, taints := tags.SplitTaintTags(cfg.nameCase(), base)
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
	// writeErr is the cloud write's error, if it failed.
	writeErr error
	// wrote is true when the cloud was written; written is what.
	wrote   bool
	written tags.Patch
}

// syncResource merges every member with the resource's tags, writes the
// combined cloud change once (aggregated over a scale set's Nodes, fitted to
// the cloud's rules), and merges again against the written state so the
// Nodes' label changes and bases reflect what the cloud now holds.
func (p *pass) syncResource(ctx context.Context, res cloud.Resource, members []*member) resourcePlan {
	plan := decide(p.cfg, res, members)
	if !plan.proposed.IsEmpty() {
		written, err := p.patchAudited(ctx, res, plan.proposed)
		plan.settle(p.cfg, written, err)
	}
	plan.finish()
	return plan
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
	return !plan.wrote && plan.writeErr == nil && !plan.wiped && len(plan.cloudSkipped) == 0 &&
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
		results[i].labels = tags.Merge(cfg.nameCase(), tags.MergeInput{
			Base:      m.base,
			Cloud:     cloudTags,
			Node:      m.nodeTags,
			Direction: cfg.direction,
			Policy:    cfg.policy,
			Hold:      append(slices.Clone(cloudHold), tags.SkippedNames(m.skipped)...),
		})
		if cfg.syncTaints {
			results[i].taints = tags.Merge(cfg.nameCase(), tags.MergeInput{
				Base: m.baseTaints, Cloud: orEmpty(cloudTaints), Node: orEmpty(m.taintTags),
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
// edits and, when it changed, the new base.
func nodeUpdateFor(cfg syncConfig, m *member, mm memberMerge) (nodeUpdate, []tags.Skipped) {
	result := mm.labels
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
	u := nodeUpdate{labels: changes}
	if text := encodeBase(base); text != m.baseText {
		u.base = text
	}
	return u, skipped
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
