package metadata

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// write sends every non-empty plan to the cloud, resources that need the
// same change grouped into one TagWrite, and audits each mutation as it
// happens: a pending record before its first request, then its record and
// metric as soon as the cloud answered for it. When a record cannot be
// written and the audit fails closed, the provider starts no further
// request; o.auditErr keeps the sink's error (also probed when nothing is
// written). It returns the result per written resource ID.
func (p *pass) write(ctx context.Context, provider cloud.ClassifiedProvider, t *target, plans []Planned, o *outcome) map[string]error {
	writes, byID := group(plans)
	if len(writes) == 0 {
		o.auditErr = p.r.audit.Probe()
		return nil
	}
	each := func(res cloud.WriteResult) error {
		pl := byID[res.ID]
		if !res.Pending {
			countMutation(t.cloud, pl.Plan.Patch, res.Err)
		}
		return p.audit(ctx, t, pl, res)
	}
	results := provider.WriteTags(ctx, writes, each)
	p.st.wrote = p.r.Now() // changes before it may predate the writes
	o.auditErr = p.r.audit.Err()
	out := make(map[string]error, len(results))
	for _, res := range results {
		out[res.ID] = res.Err
	}
	return out
}

// group turns plans into TagWrites: one per distinct patch (with its
// expected values), listing every resource that needs exactly it.
func group(plans []Planned) ([]cloud.TagWrite, map[string]Planned) {
	byKey := map[string]*cloud.TagWrite{}
	byID := map[string]Planned{}
	var keys []string
	for _, pl := range plans {
		if pl.Plan.Patch.IsEmpty() {
			continue
		}
		k := patchKey(pl.Plan)
		w, ok := byKey[k]
		if !ok {
			w = &cloud.TagWrite{Patch: pl.Plan.Patch, Expect: pl.Plan.Expect}
			byKey[k] = w
			keys = append(keys, k)
		}
		w.IDs = append(w.IDs, pl.Resource.ID)
		byID[pl.Resource.ID] = pl
	}
	sort.Strings(keys)
	writes := make([]cloud.TagWrite, len(keys))
	for i, k := range keys {
		writes[i] = *byKey[k]
	}
	return writes, byID
}

// patchKey renders a plan's patch and expected values canonically.
func patchKey(plan tags.ResourcePlan) string {
	return plan.Patch.Key() + fmt.Sprintf(" %q", map[string]string(plan.Expect))
}

// audit writes the record of one resource's mutation under the audit
// policy (audit.Log.Mutation): pending before it is sent, else its result.
// The error is the sink's when the record was lost and the audit fails
// closed.
func (p *pass) audit(ctx context.Context, t *target, pl Planned, res cloud.WriteResult) error {
	rec := audit.Record{
		Time:     p.r.Now().UTC(),
		Object:   audit.Object{Kind: t.kind, Namespace: t.obj.GetNamespace(), Name: t.obj.GetName(), Generation: t.obj.GetGeneration()},
		Cloud:    t.cloud,
		Resource: pl.Resource.ID,
		Result:   audit.ResultOK,
	}
	rec.Describe(pl.Resource.Rules.NameCase(), pl.Resource.Tags, pl.Plan.Patch)
	switch {
	case res.Pending:
		rec.Result = audit.ResultPending
	case res.Err != nil:
		rec.Result, rec.Error = audit.ResultError, res.Err.Error()
	}
	return p.r.audit.Mutation(ctx, rec)
}

// auditFailing sets the AuditFailing condition: true while the sink
// fails, false once it works again (absent until it first failed).
func (o *outcome) auditFailing(conds []metav1.Condition, set func(string, bool, string, string)) {
	switch {
	case o.auditErr != nil:
		set(v1alpha1.ConditionAuditFailing, true, ReasonAuditSinkFailing,
			"the audit log cannot take records; no cloud mutation is made until it can (tagsync run --audit-fail-open goes on without): "+o.auditErr.Error())
	case meta.FindStatusCondition(conds, v1alpha1.ConditionAuditFailing) != nil:
		set(v1alpha1.ConditionAuditFailing, false, ReasonAuditSinkWorking, "the audit log takes records")
	}
}
