package nodetags

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// member is one managed Node in a sync pass, with its side of the merge.
type member struct {
	node     *corev1.Node
	base     tags.Set // nil: no history
	baseText string   // the annotation as found
	nodeTags tags.Set // managed labels decoded, filtered
	skipped  []tags.Skipped
	note     string // placement note (e.g. a fallback to the scale set)
}

// newMember decodes a Node's managed labels and stored base.
func newMember(cfg syncConfig, node *corev1.Node, note string) (*member, error) {
	m := &member{node: node, baseText: node.Annotations[BaseAnnotation], note: note}
	base, err := readBase(node)
	if base != nil {
		m.base = cfg.filter.Apply(base)
	}
	decoded, skipped := cfg.codec.FromLabels(node.Labels)
	m.nodeTags = cfg.filter.Apply(decoded)
	m.skipped = skipped
	return m, err
}

// resourcePlan is what a pass decided for one cloud resource and the Nodes
// that sync with it.
type resourcePlan struct {
	resource cloud.Resource
	members  []*member
	// results are the members' final merges, in members' order.
	results []tags.MergeResult
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
func (r *Reconciler) syncResource(ctx context.Context, cfg syncConfig, res cloud.Resource, members []*member) resourcePlan {
	plan := resourcePlan{resource: res, members: members}
	results := mergeAll(cfg, res, members, &plan)
	patch := aggregate(res, members, results, &plan)
	fitted, limitSkipped := tags.Fit(res.Tags, patch, r.Provider.Rules())
	plan.limitSkipped = limitSkipped
	if !fitted.IsEmpty() {
		written, err := r.Provider.PatchTags(ctx, res.ID, fitted)
		if err != nil {
			plan.writeErr = err
		} else {
			plan.wrote, plan.written = true, fitted
			plan.resource = written
			results = mergeAll(cfg, written, members, &plan)
		}
	}
	plan.results = make([]tags.MergeResult, len(results))
	for i, res := range results {
		// Whatever cloud change is still proposed was not written (a
		// disagreement, a limit, a failure): keep its base so it is retried.
		plan.results[i] = res.RestrictCloud(tags.Patch{})
	}
	return plan
}

// mergeAll runs the three-way merge for every member against res's tags.
func mergeAll(cfg syncConfig, res cloud.Resource, members []*member, plan *resourcePlan) []tags.MergeResult {
	cloudTags := cfg.filter.Apply(res.Tags)
	_, plan.cloudSkipped = cfg.codec.ToLabels(cloudTags)
	cloudHold := tags.SkippedNames(plan.cloudSkipped)
	results := make([]tags.MergeResult, len(members))
	for i, m := range members {
		results[i] = tags.Merge(tags.MergeInput{
			Base:      m.base,
			Cloud:     cloudTags,
			Node:      m.nodeTags,
			Direction: cfg.direction,
			Policy:    cfg.policy,
			Hold:      append(slices.Clone(cloudHold), tags.SkippedNames(m.skipped)...),
		})
		plan.wiped = plan.wiped || results[i].Wiped
	}
	return results
}

// aggregate combines the members' cloud proposals into one patch; for a
// resource shared by several Nodes, disagreeing proposals are conflicts and
// are not written.
func aggregate(res cloud.Resource, members []*member, results []tags.MergeResult, plan *resourcePlan) tags.Patch {
	var proposals []tags.NodeProposal
	for i, r := range results {
		if !r.CloudPatch.IsEmpty() {
			proposals = append(proposals, tags.NodeProposal{Node: members[i].node.Name, Patch: r.CloudPatch})
		}
	}
	if len(proposals) == 0 {
		return tags.Patch{}
	}
	agg := tags.Aggregate(res.Tags, proposals)
	plan.aggConflicts = agg.Conflicts
	return agg.Patch
}

// nodeUpdateFor turns a member's final merge into the Node change: the label
// edits and, when it changed, the new base.
func nodeUpdateFor(cfg syncConfig, m *member, result tags.MergeResult) (nodeUpdate, []tags.Skipped) {
	changes, skipped := cfg.codec.LabelChanges(m.node.Labels, result.NodePatch)
	if len(skipped) > 0 {
		result = result.RestrictNode(withoutNames(result.NodePatch, tags.SkippedNames(skipped)))
	}
	u := nodeUpdate{labels: changes}
	if text := encodeBase(result.NewBase); text != m.baseText {
		u.base = text
	}
	return u, skipped
}

// withoutNames returns p without operations on the given names.
func withoutNames(p tags.Patch, names []string) tags.Patch {
	drop := map[string]bool{}
	for _, n := range names {
		drop[tags.Key(n)] = true
	}
	out := tags.Patch{}
	for k, v := range p.Set {
		if !drop[tags.Key(k)] {
			if out.Set == nil {
				out.Set = tags.Set{}
			}
			out.Set[k] = v
		}
	}
	for _, k := range p.Delete {
		if !drop[tags.Key(k)] {
			out.Delete = append(out.Delete, k)
		}
	}
	return out
}
