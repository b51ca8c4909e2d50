package metadata

import (
	"context"
	"sort"
	"strings"

	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// write sends every non-empty plan to the cloud, resources that need the
// same change grouped into one TagWrite, and audits each mutation. It
// returns the result per written resource ID.
func (p *pass) write(ctx context.Context, provider cloud.Provider, t *target, plans []Planned) map[string]error {
	writes, byID := group(plans)
	if len(writes) == 0 {
		return nil
	}
	results := provider.WriteTags(ctx, writes)
	out := make(map[string]error, len(results))
	for _, res := range results {
		out[res.ID] = res.Err
		pl := byID[res.ID]
		p.audit(t, pl, res.Err)
		countMutation(t.cloud, pl.Plan.Patch, res.Err)
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
	var b strings.Builder
	for _, n := range plan.Patch.Set.Names() {
		b.WriteString("s\x00" + n + "\x00" + plan.Patch.Set[n] + "\x00")
	}
	for _, n := range plan.Patch.Delete {
		b.WriteString("d\x00" + n + "\x00")
	}
	for _, n := range plan.Expect.Names() {
		b.WriteString("e\x00" + n + "\x00" + plan.Expect[n] + "\x00")
	}
	return b.String()
}

// audit writes the record of one resource's mutation.
func (p *pass) audit(t *target, pl Planned, err error) {
	nc := pl.Resource.Rules.NameCase()
	rec := audit.Record{
		Time:     p.r.now().UTC(),
		Object:   audit.Object{Kind: t.kind, Namespace: t.obj.GetNamespace(), Name: t.obj.GetName(), Generation: t.obj.GetGeneration()},
		Cloud:    t.cloud,
		Resource: pl.Resource.ID,
		Result:   audit.ResultOK,
	}
	for _, n := range pl.Plan.Patch.Set.Names() {
		if rec.Set == nil {
			rec.Set = map[string]audit.Change{}
		}
		c := audit.Change{After: pl.Plan.Patch.Set[n]}
		if before, ok := pl.Resource.Tags.Get(nc, n); ok {
			c.Before = &before
		}
		rec.Set[n] = c
	}
	for _, n := range pl.Plan.Patch.Delete {
		if rec.Deleted == nil {
			rec.Deleted = map[string]string{}
		}
		rec.Deleted[n], _ = pl.Resource.Tags.Get(nc, n)
	}
	if err != nil {
		rec.Result, rec.Error = audit.ResultError, err.Error()
	}
	if werr := p.r.audit.Write(rec); werr != nil {
		auditErrors.Inc()
		p.log.Error(werr, "audit record not written", "resource", pl.Resource.ID)
	}
}
