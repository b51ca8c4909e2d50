package nodetags

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// The applier: the pass's writes, as its plans say, with their outcomes
// recorded in the plans for the reporter. The cloud is written first,
// through the clouds' one write (a Fresh WriteTags, audited); then each
// resource's Nodes (labels, base annotation, pending taint).

// resourceResult is the applier's result for one resource's plan: the
// plan (the planner's decision, which the write does not change) with the
// cloud write's outcome, the members merged again against the tags the
// write left (settle), and the Node writes. Its resource, results,
// cloudSkipped and wiped shadow the plan's: they are as the write left
// them.
type resourceResult struct {
	*resourcePlan
	resource     cloud.Resource
	results      []memberMerge
	cloudSkipped []tags.Skipped
	wiped        bool
	// writeErr is the cloud write's error, if it failed.
	writeErr error
	// wrote is true when the cloud was written; written is what.
	wrote   bool
	written tags.Patch
	// nodes are the applier's records of the members' Node writes, in
	// members' order; labelled counts the Nodes whose labels it wrote, the
	// first of them with firstLabels.
	nodes       []nodeResult
	labelled    int
	firstLabels tags.LabelChanges
}

// resultsOf starts the results of plans, nothing written yet: the
// members' merges move from each plan into its result (the write stage
// settles and finishes them; copying them would cost a pass at 10,000
// Nodes some megabytes), the rest of the plan stays as decided.
func resultsOf(plans []*resourcePlan) []*resourceResult {
	out := make([]*resourceResult, len(plans))
	for i, plan := range plans {
		out[i] = &resourceResult{resourcePlan: plan, resource: plan.resource, results: plan.results,
			cloudSkipped: plan.cloudSkipped, wiped: plan.wiped}
		plan.results = nil
	}
	return out
}

// settle records the cloud write's outcome: on success the members are
// merged again against written, the resource's tags after the write.
func (r *resourceResult) settle(cfg syncConfig, written cloud.Resource, err error) {
	if err != nil {
		r.writeErr = err
		return
	}
	r.wrote, r.written = true, r.proposed
	r.resource = written
	after := *r.resourcePlan // the merge notes what it skips and whether the tags were wiped
	r.results = mergeAll(cfg, written, r.members, &after)
	r.cloudSkipped, r.wiped = after.cloudSkipped, after.wiped
}

// finish keeps, for whatever cloud change is still proposed (not written: a
// disagreement, a limit, a failure) and for the label deletions held, the
// members' bases so it is retried.
func (r *resourceResult) finish(nc tags.NameCase) {
	for i, res := range r.results {
		res = res.unwritten()
		if len(r.heldLabels) > 0 {
			res.labels = res.labels.RestrictNode(withoutNames(nc, tags.Patch(res.labels.NodePatch), r.heldLabels))
		}
		r.results[i] = res
	}
}

// untroubled reports whether the plan wrote nothing to the cloud and found
// nothing to report about the resource: its nodes may then be steady.
func (r *resourceResult) untroubled() bool {
	return !r.wrote && r.writeErr == nil && !r.wiped && !r.withheld && len(r.cloudSkipped) == 0 &&
		len(r.limitSkipped) == 0 && len(r.aggConflicts) == 0
}

// writeAll makes the plans' cloud writes with the provider's one write,
// a Fresh WriteTags: each resource shared by several Nodes alone, as its plan
// comes; then resources of their own whose proposed patch is identical
// together (a provider that writes one resource at a time writes them one
// by one). Each written plan is settled with its outcome.
func (p *pass) writeAll(ctx context.Context, plans []*resourcePlan) []*resourceResult {
	results := resultsOf(plans)
	var order []string
	batched := map[string][]*resourceResult{}
	for _, plan := range results {
		switch {
		case plan.proposed.IsEmpty():
		case plan.shared:
			p.patchBatchAudited(ctx, []*resourceResult{plan})
		default:
			key := plan.proposed.Key()
			if batched[key] == nil {
				order = append(order, key)
			}
			batched[key] = append(batched[key], plan)
		}
	}
	for _, key := range order {
		p.patchBatchAudited(ctx, batched[key])
	}
	return results
}

// patchBatchAudited writes the plans' identical proposed patch to their
// resources (writeAudited) and settles each plan with its resource's
// result.
func (p *pass) patchBatchAudited(ctx context.Context, plans []*resourceResult) {
	resources := make([]cloud.Resource, len(plans))
	for i, plan := range plans {
		resources[i] = plan.resource
	}
	p.writeAudited(ctx, plans[0].proposed, resources, func(i int, written cloud.Resource, err error) {
		plans[i].settle(p.cfg, written, err)
	})
}

// writeAudited is the applier's one cloud write: patch to every resource
// with one Fresh write (the provider reads each resource before writing
// it), each resource audited as it happens (kit.AuditedWrite: a pending
// record before its first request, a result record as the provider
// reports it; while the audit fails closed and a record is lost, nothing
// more is sent). done is called once for each resource, by its index, with
// its result.
func (p *pass) writeAudited(ctx context.Context, patch tags.Patch, resources []cloud.Resource,
	done func(i int, written cloud.Resource, err error)) {
	byID := make(map[string]int, len(resources))
	ids := make([]string, len(resources))
	for i, res := range resources {
		byID[res.ID] = i
		ids[i] = res.ID
	}
	record := func(id string) audit.Write {
		return audit.Write{Object: kit.AuditObject("NodeTagSync", p.nts), Cloud: p.cfg.provider.Name(), Resource: id,
			NameCase: p.cfg.nameCase(), Before: resources[byID[id]].Tags, Patch: patch}
	}
	results := kit.AuditedWrite(ctx, p.r.audit, p.r.Now, p.cfg.provider, []cloud.TagWrite{{IDs: ids, Patch: patch, Fresh: true}}, record,
		func(res cloud.WriteResult) {
			p.r.changes.markRead(p.r.Now(), cloud.CanonicalID(res.ID)) // changes before the write may predate it
		})
	for _, res := range results {
		i := byID[res.ID]
		done(i, cloud.Resource{ID: res.ID, Tags: res.Tags, OwnOnly: resources[i].OwnOnly}, res.Err)
	}
}

// writeMembers makes the members' writes (planMemberWrites) with the
// provider's one write (a Fresh WriteTags), members whose patch is identical
// together (AWS: one CreateTags for up to 1000 instances), audited as
// every cloud write. What does not fit a member's tag limit is reported
// (a TagUnrepresentable warning and the status's skipped tags); a failed
// write is a warning and fails the pass, so it is retried with backoff. A
// suspended pass writes nothing.
func (p *pass) writeMembers(ctx context.Context, writes []memberWrite) {
	var order []string
	batched := map[string][]memberWrite{}
	for _, w := range writes {
		for _, s := range w.skipped {
			p.out.addSkipped(skippedEntry(w.resource.ID, s))
			p.notes.Once(p.nts, "skip/"+w.resource.ID+"/"+s.Name, ReasonTagUnrepresentable,
				fmt.Sprintf("tag %q of %s not copied to its member %s (node %s): %s", s.Name, w.shared, w.resource.ID, w.nodes[0], s.Reason))
		}
		if w.patch.IsEmpty() || p.cfg.suspend {
			continue
		}
		key := w.patch.Key()
		if batched[key] == nil {
			order = append(order, key)
		}
		batched[key] = append(batched[key], w)
	}
	for _, key := range order {
		p.patchMembers(ctx, batched[key])
	}
}

// patchMembers writes the identical patch of writes with writeAudited and
// counts and reports each member's result.
func (p *pass) patchMembers(ctx context.Context, writes []memberWrite) {
	resources := make([]cloud.Resource, len(writes))
	for i, w := range writes {
		resources[i] = w.resource
	}
	p.writeAudited(ctx, writes[0].patch, resources, func(i int, _ cloud.Resource, err error) {
		w := writes[i]
		if err != nil {
			p.out.memberFailed(fmt.Errorf("instance %s of %s (node %s): %w", w.resource.ID, w.shared, w.nodes[0], err))
			p.notes.Once(p.nts, "member/"+w.resource.ID, ReasonCloudWriteFailed,
				fmt.Sprintf("copying the tags of %s to its member %s (node %s) failed: %v", w.shared, w.resource.ID, w.nodes[0], err))
			return
		}
		p.out.memberWritten()
	})
}

// writeNodes finishes every plan once the cloud is written (plan.finish)
// and writes its Nodes, resource by resource.
func (p *pass) writeNodes(ctx context.Context, plans []*resourceResult) {
	for _, plan := range plans {
		plan.finish(p.cfg.nameCase())
		p.applyNodes(ctx, plan)
	}
}

// nodeOutcome is what became of a member's Node write.
type nodeOutcome uint8

const (
	// nodeUnchanged: the Node needed no write.
	nodeUnchanged nodeOutcome = iota
	// nodeSuspended: a suspended pass did not make the write.
	nodeSuspended
	// nodeWritten: the Node was patched.
	nodeWritten
	// nodeInFlight: the Node changed since the cache read it (409); its
	// watch event brings a pass that sees the change, so nothing failed.
	nodeInFlight
	// nodeFailed: the write failed with nodeResult.err.
	nodeFailed
)

// nodeResult is the applier's record of one member's Node, for the
// reporter.
type nodeResult struct {
	outcome nodeOutcome
	err     error
	// skipped are labels the Node could not be given; retained counts the
	// label deletions deletionPolicy Retain kept.
	skipped  []tags.Skipped
	retained int
	// released is set when the write removes the pending taint.
	released bool
}

// applyNodes writes each member's label changes and new base, in parallel,
// and records each Node's outcome in plan.nodes. Nodes that need no change
// are not written. A Node still carrying the pending taint has it removed
// by the same write that gives it its labels (or, when it needs none, by a
// write of its own).
func (p *pass) applyNodes(ctx context.Context, plan *resourceResult) {
	limit := p.r.nodeWriteConcurrency
	if limit <= 0 {
		limit = 16
	}
	var g errgroup.Group
	g.SetLimit(limit)
	plan.nodes = make([]nodeResult, len(plan.members))
	for i, m := range plan.members {
		u, skipped := memberUpdate(p.cfg, m, plan.results[i])
		nr := &plan.nodes[i]
		nr.skipped, nr.retained = skipped, len(u.Retained)
		switch {
		case u.IsEmpty():
			continue
		case p.cfg.suspend:
			nr.outcome = nodeSuspended
			continue
		}
		if !u.Labels.IsEmpty() {
			if plan.labelled == 0 {
				plan.firstLabels = u.Labels
			}
			plan.labelled++
		}
		nr.released = u.Taints != nil
		g.Go(func() error {
			nr.outcome, nr.err = p.writeNode(ctx, m, u)
			return nil
		})
	}
	_ = g.Wait()
}

// writeNode patches one Node, recorded as the controller's own write while
// it is in flight; a 409 means the Node changed since the cache read it,
// and its watch event brings a pass that sees the change, so nothing
// failed. The base annotation alone (baseOnly: what the pass wrote to the
// cloud) is then written, so that the next pass does not mistake the
// pass's own cloud write and the edit for a conflict.
func (p *pass) writeNode(ctx context.Context, m *member, u nodeUpdate) (nodeOutcome, error) {
	err := p.r.writes.Patch(ctx, p.r.Client, m.node.Name, m.node.Name, m.node.ResourceVersion, u.patch())
	if apierrors.IsConflict(err) && u.baseOnly != "" {
		// Not recorded in flight: its watch event brings the next pass.
		err = kit.PatchNode(ctx, p.r.Client, m.node.Name, "", kit.NodePatch{Annotations: map[string]string{v1alpha1.LastSyncedTagsAnnotation: u.baseOnly}})
		if err == nil {
			return nodeInFlight, nil
		}
	}
	switch {
	case apierrors.IsConflict(err):
		return nodeInFlight, nil
	case err != nil:
		return nodeFailed, err
	}
	return nodeWritten, nil
}

// nodeUpdate is the change one pass makes to a Node (kit.NodeUpdate: its
// Record is the merge base), and the base alone for a Node that changed
// under the pass.
type nodeUpdate struct {
	kit.NodeUpdate
	// baseOnly is the annotation value when none of the label changes
	// can be written (baseOnlyFor); "" when Record is.
	baseOnly string
}

// patch is the update as kit's Node write: only the changed labels and
// the base annotation (and, when the pending taint goes, the Node's taints
// without it), guarded by the Node's resourceVersion: if the Node changed
// since it was read, the API server answers Conflict and the next pass
// re-reads it, so a label or taint someone else just wrote is never
// overwritten.
func (u nodeUpdate) patch() kit.NodePatch { return u.Patch(v1alpha1.LastSyncedTagsAnnotation, true) }
