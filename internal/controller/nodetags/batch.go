package nodetags

import (
	"context"
	"fmt"

	"github.com/tagsync/tagsync/internal/cloud"
)

// decided is a resource whose cloud write is decided but not yet made.
type decided struct {
	plan     resourcePlan
	tagsHash uint64
	shared   bool
}

// decideAll decides every resource's plan (see decide), in ids' order. The
// pass holds every resource's merge state at once, so that what it holds
// back (a mass deletion) is judged over the whole pass.
func (p *pass) decideAll(ids []string, groups map[string][]placed, snap cloud.Snapshot) []*decided {
	var out []*decided
	p.eachResource(ids, groups, snap, func(w resourceWork) {
		out = append(out, &decided{plan: decide(p.cfg, w.res, w.members), tagsHash: w.tagsHash, shared: w.shared})
	})
	return out
}

// hold applies holdWrites to the decided plans and records what it held.
func (p *pass) hold(all []*decided) {
	plans := make([]*resourcePlan, len(all))
	for i, d := range all {
		plans[i] = &d.plan
	}
	prev := p.st.held
	if prev == nil {
		prev = p.nts.Status.DeletionsHeld
	}
	h := holdWrites(p.cfg, plans, approval(p.nts, prev, p.r.Now()))
	p.out.held = h
	if p.targeted {
		// A targeted pass sees part of the cluster: what it holds is the
		// full passes' to report and to record (one token per set).
		return
	}
	switch {
	case h.record != nil && h.approved:
		p.notes.Normal(p.nts, ReasonDeletionsApproved, fmt.Sprintf("the held deletions (token %s, %d tags) were approved and are written",
			h.record.Token, h.record.Count))
	case h.record != nil:
		p.notes.Once(p.nts, "held/"+h.record.Token, ReasonDeletionsHeld, heldMessage(p.nts, h.record))
	case h.retained > 0:
		p.notes.Once(p.nts, "retained", ReasonDeletionsRetained,
			fmt.Sprintf("deletionPolicy Retain kept %d cloud tags the sync would have deleted", h.retained))
	}
	switch {
	case h.record != nil && !h.approved:
		p.st.held = h.record
	case !p.cfg.suspend:
		p.st.held = nil
	}
}

// writeAll makes the decided cloud writes with the provider's one write,
// PatchTagsBatch: each resource shared by several Nodes alone, as its plan
// comes; then resources of their own whose proposed patch is identical
// together (a provider that writes one resource at a time writes them one
// by one). Each written plan is settled with its outcome.
func (p *pass) writeAll(ctx context.Context, all []*decided) {
	var order []string
	batched := map[string][]*resourcePlan{}
	for _, d := range all {
		switch {
		case d.plan.proposed.IsEmpty():
		case d.shared:
			p.patchBatchAudited(ctx, []*resourcePlan{&d.plan})
		default:
			key := d.plan.proposed.Key()
			if batched[key] == nil {
				order = append(order, key)
			}
			batched[key] = append(batched[key], &d.plan)
		}
	}
	for _, key := range order {
		p.patchBatchAudited(ctx, batched[key])
	}
}
