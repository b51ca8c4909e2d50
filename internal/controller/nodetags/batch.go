package nodetags

import (
	"context"

	"github.com/tagsync/tagsync/internal/cloud"
)

// decided is a resource whose cloud write is decided but not yet made.
type decided struct {
	plan     resourcePlan
	tagsHash uint64
	shared   bool
}

// decideAll decides every resource's plan (see decide), in ids' order.
func (p *pass) decideAll(ids []string, groups map[string][]placed, snap cloud.Snapshot) []*decided {
	var out []*decided
	p.eachResource(ids, groups, snap, func(w resourceWork) {
		out = append(out, &decided{plan: decide(p.cfg, w.res, w.members), tagsHash: w.tagsHash, shared: w.shared})
	})
	return out
}

// syncBatched syncs decided resources on a provider that batches writes:
// resources of their own (not shared by several Nodes) whose proposed patch
// is identical are written with one PatchTagsBatch, shared ones one by one
// with PatchTags; then each plan is settled, reported and its Nodes
// written, in order, as syncResource does for one resource.
func (p *pass) syncBatched(ctx context.Context, bp cloud.BatchPatcher, all []*decided) {
	var order []string
	batches := map[string][]*resourcePlan{}
	for _, d := range all {
		switch {
		case d.plan.proposed.IsEmpty():
		case d.shared:
			written, err := p.patchAudited(ctx, d.plan.resource, d.plan.proposed)
			d.plan.settle(p.cfg, written, err)
		default:
			key := d.plan.proposed.Key()
			if batches[key] == nil {
				order = append(order, key)
			}
			batches[key] = append(batches[key], &d.plan)
		}
	}
	for _, key := range order {
		p.patchBatchAudited(ctx, bp, batches[key])
	}
	for _, d := range all {
		d.plan.finish()
		p.report(d.plan)
		p.applyNodes(ctx, d.plan, d.tagsHash)
	}
}
