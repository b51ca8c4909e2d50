package nodetags

import (
	"context"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// patchAudited writes patch to res through PatchTags between two audit
// records: pending before the request, then its result, both with the
// tags' values before and after. When the pending record cannot be
// written and the audit fails closed, nothing is sent and the error is
// the sink's.
func (p *pass) patchAudited(ctx context.Context, res cloud.Resource, patch tags.Patch) (cloud.Resource, error) {
	if err := p.audit(ctx, res, patch, audit.ResultPending, nil); err != nil {
		return cloud.Resource{}, err
	}
	written, err := p.cfg.provider.PatchTags(ctx, res.ID, patch)
	p.r.changes.markRead(p.r.Now(), cloud.CanonicalID(res.ID)) // changes before the write may predate it
	result := audit.ResultOK
	if err != nil {
		result = audit.ResultError
	}
	_ = p.audit(ctx, res, patch, result, err) // the write is done: its outcome stands
	return written, err
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
