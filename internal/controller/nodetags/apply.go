package nodetags

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// applyNodes writes each member's label changes and new base, in parallel,
// and counts the outcome. Nodes that need no change are not written. A Node
// still carrying the pending taint has it removed by the same write that
// gives it its labels (or, when it needs none, by a write of its own).
func (p *pass) applyNodes(ctx context.Context, plan resourcePlan, tagsHash uint64) {
	limit := p.r.nodeWriteConcurrency
	if limit <= 0 {
		limit = 16
	}
	var g errgroup.Group
	g.SetLimit(limit)
	var changed []string
	for i, m := range plan.members {
		u, skipped := memberUpdate(p.cfg, m, plan.results[i])
		p.out.nodeRetained(len(u.retained))
		for _, s := range skipped {
			p.out.addSkipped(skippedEntry(m.node.Name, s))
			p.notes.Once(m.node, "skip/"+m.node.Name+"/"+s.Name, ReasonTagUnrepresentable, fmt.Sprintf("tag %q: %s", s.Name, s.Reason))
		}
		if u.isEmpty() {
			p.out.nodeSynced(plan.writeErr == nil)
			if plan.untroubled() && len(skipped) == 0 && len(u.retained) == 0 && len(m.skipped) == 0 && m.note == "" && len(plan.results[i].conflicts()) == 0 {
				p.markSteady(m.node, steadyMark(m.node, tagsHash, p.nts.Generation))
			}
			continue
		}
		if p.cfg.suspend {
			p.out.nodeSuspended()
			continue
		}
		if !u.labels.IsEmpty() {
			changed = append(changed, describePatch(u.labels.Set, u.labels.Delete))
		}
		g.Go(func() error {
			p.writeNode(ctx, m, u, plan.writeErr == nil)
			return nil
		})
	}
	_ = g.Wait()
	if len(changed) > 0 {
		p.notes.Normal(p.nts, ReasonLabelsSynced, fmt.Sprintf("labels of %d node(s) of %s updated (%s)",
			len(changed), plan.resource.ID, changed[0]))
	}
}

// memberUpdate is the whole change a pass makes to a member's Node: the
// label edits and new base of its final merge, and the pending taint's
// removal.
func memberUpdate(cfg syncConfig, m *member, mm memberMerge) (nodeUpdate, []tags.Skipped) {
	u, skipped := nodeUpdateFor(cfg, m, mm)
	u.taints = kit.ReleaseTaint(m.node.Spec.Taints, PendingTaintKey)
	return u, skipped
}

// writeNode patches one Node and counts the result; a 409 means the Node
// changed since the cache read it, and its watch event brings a pass that
// sees the change, so nothing failed.
func (p *pass) writeNode(ctx context.Context, m *member, u nodeUpdate, cloudOK bool) {
	p.r.writes.expect(m.node.Name, m.node.ResourceVersion, u)
	err := patchNode(ctx, p.r.Client, m.node, u)
	if err != nil {
		p.r.writes.forget(m.node.Name)
	}
	switch {
	case apierrors.IsConflict(err):
		p.out.nodeInFlight()
	case err != nil:
		p.out.fail(err)
		writesTotal.WithLabelValues(p.nts.Name, "node", "error").Inc()
		p.notes.Warn(m.node, ReasonNodeWriteFailed, err.Error())
	default:
		p.out.nodeWritten(cloudOK)
		writesTotal.WithLabelValues(p.nts.Name, "node", "ok").Inc()
		if u.taints != nil {
			log.FromContext(ctx).V(1).Info("pending taint removed: the node has its labels", "node", m.node.Name)
		}
	}
}
