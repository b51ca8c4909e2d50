package workloadtags

import (
	"context"

	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// kind names the policy kind in audit records.
const kind = "WorkloadTagPolicy"

// write sends every patch (nothing while the policy is suspended),
// resources that need the same change in one write, each mutation audited
// as it happens. It returns each written resource's error by canonical ID
// (nil: written).
func (p *pass) write(ctx context.Context, plans []resourcePlan) map[string]error {
	ws := writes(plans)
	if len(ws) == 0 || p.cfg.suspend {
		return nil
	}
	byID := make(map[string]*resourcePlan, len(plans))
	for i := range plans {
		byID[plans[i].id] = &plans[i]
	}
	record := func(id string) audit.Write {
		rp := byID[id]
		return audit.Write{Object: kit.AuditObject(kind, p.obj), Cloud: p.cfg.provider, Resource: id,
			NameCase: rp.rules.NameCase(), Before: rp.before, Patch: rp.patch}
	}
	out := map[string]error{}
	kit.AuditedWrite(ctx, p.r.audit, p.r.Now, p.provider, ws, record, func(res cloud.WriteResult) {
		rp := byID[res.ID]
		out[cloud.CanonicalID(res.ID)] = res.Err
		countMutation(p.cfg.provider, rp.patch, res.Err)
		if res.Err == nil {
			p.remember(rp, res.Overridden)
			nc := rp.rules.NameCase()
			p.st.overridden.Note(p.r.Now(), rp.patch.Set, res.Overridden, func(name, value string) kit.RecentTag {
				return writeKey(rp.id, nc, name, value)
			})
		}
	})
	return out
}

// remember records a done write, for freshen: the values its answer
// carried where they differ from those written (overridden).
func (p *pass) remember(rp *resourcePlan, overridden tags.Set) {
	nc := rp.rules.NameCase()
	before := tags.Set{}
	for k := range rp.patch.Set {
		if v, ok := rp.before.Get(nc, k); ok {
			before[k] = v
		}
	}
	after := rp.patch.Set
	if len(overridden) > 0 {
		after = tags.Patch{Set: overridden}.Apply(nc, rp.patch.Set)
	}
	p.st.written[cloud.CanonicalID(rp.id)] = written{before: before, after: after, at: p.r.Now()}
}
