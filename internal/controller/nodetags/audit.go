package nodetags

import (
	"context"
	"fmt"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// patchBatchAudited writes the plans' identical proposed patch to their
// resources with one PatchTagsBatch and settles each plan with its
// resource's result. The audit is per resource, between two records with
// the tags' values before and after: a pending record for each before the
// batch is sent, and a result record for each as the provider reports it. A resource whose pending record
// cannot be written while the audit fails closed is left out of the
// batch, its plan failing with the sink's error.
func (p *pass) patchBatchAudited(ctx context.Context, plans []*resourcePlan) {
	patch := plans[0].proposed
	byID := make(map[string]*resourcePlan, len(plans))
	ids := make([]string, 0, len(plans))
	for _, plan := range plans {
		if err := p.audit(ctx, plan.resource, patch, audit.ResultPending, nil); err != nil {
			plan.settle(p.cfg, cloud.Resource{}, err)
			continue
		}
		byID[plan.resource.ID] = plan
		ids = append(ids, plan.resource.ID)
	}
	if len(ids) == 0 {
		return
	}
	p.cfg.provider.PatchTagsBatch(ctx, ids, patch, func(id string, written cloud.Resource, err error) {
		plan, ok := byID[id]
		if !ok {
			return
		}
		delete(byID, id)
		p.r.changes.markRead(p.r.Now(), cloud.CanonicalID(id))     // changes before the write may predate it
		_ = p.audit(ctx, plan.resource, patch, resultOf(err), err) // the write is done: its outcome stands
		plan.settle(p.cfg, written, err)
	})
	for id, plan := range byID { // the provider broke its contract: retry them
		err := fmt.Errorf("the cloud provider reported no result for %s", id)
		_ = p.audit(ctx, plan.resource, patch, audit.ResultError, err)
		plan.settle(p.cfg, cloud.Resource{}, err)
	}
}

// resultOf is the audit result of a write that ended with err.
func resultOf(err error) string {
	if err != nil {
		return audit.ResultError
	}
	return audit.ResultOK
}

// audit writes one record of a PatchTags; the error is the sink's when the
// record was lost and the audit fails closed.
func (p *pass) audit(ctx context.Context, res cloud.Resource, patch tags.Patch, result string, err error) error {
	rec := audit.Record{
		Time:     p.r.Now().UTC(),
		Object:   audit.Object{Kind: "NodeTagSync", Name: p.nts.Name, Generation: p.nts.Generation},
		Cloud:    p.cfg.provider.Name(),
		Resource: res.ID,
		Result:   result,
	}
	rec.Describe(p.cfg.nameCase(), res.Tags, patch)
	if err != nil {
		rec.Error = err.Error()
	}
	werr := p.r.audit.Write(rec)
	if werr == nil {
		return nil
	}
	ctrllog.FromContext(ctx).Error(werr, "audit record not written", "resource", res.ID, "failOpen", p.r.audit.FailOpen())
	if p.r.audit.FailOpen() {
		return nil
	}
	return werr
}
