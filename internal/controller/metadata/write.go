package metadata

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

// write is the write stage of a pass, full or targeted: each target's
// plans, as the safeguards left them, written (writeTarget).
func (p *pass) write(ctx context.Context, planned []*targetPlan) {
	for _, tp := range planned {
		p.writeTarget(ctx, tp)
	}
}

// writeTarget writes one target's plans (nothing while it is suspended:
// the audit sink is only probed), the put-backs another writer keeps
// undoing left out (fights.go), in three steps: the held tags recorded in
// its status first (recordIntent; when they cannot be, no write is sent),
// the grouped writes with their audit records (writeGrouped), then the
// tally of every resource into the outcome and the held-tags record. After
// a complete discovery, the record forgets the resources not found.
func (p *pass) writeTarget(ctx context.Context, tp *targetPlan) {
	o := tp.o
	var results map[string]error
	switch {
	case o.suspended != "":
		o.auditErr = p.r.audit.Probe()
	default:
		before := heldBefore(tp)
		p.stopFights(tp)
		if err := p.recordIntent(ctx, o.t, tp.plans, tp.held); err != nil {
			results = unsent(tp.plans, err)
		} else {
			results = p.writeGrouped(ctx, tp.provider, o.t, tp.plans, o)
		}
		p.recordRestores(tp, before, results)
	}
	o.tally(tp.plans, results, tp.held)
	p.remember(tp, results)
	if tp.complete {
		tp.held.keepOnly(seenIDs(tp.resources))
	}
}

// recordIntent stores in the target's status, before anything is written,
// the active tag list and the held tags as they will be once the plans are
// written, so that a controller stopped during the writes still knows,
// when it starts again, which tags the object wrote. Nothing is patched
// when the record does not change. When the record cannot be stored it
// returns errNotRecorded, leaves the status as it was, and nothing may be
// written.
func (p *pass) recordIntent(ctx context.Context, t *target, plans []Planned, h *heldTags) error {
	if t.opcode != v1alpha1.OpcodeAdd {
		return nil
	}
	overlay := map[string][]string{}
	for _, pl := range plans {
		if !pl.Plan.Patch.IsEmpty() {
			overlay[pl.Resource.ID] = pl.Plan.Held
		}
	}
	if len(overlay) == 0 {
		return nil
	}
	next := heldStatus(t, h, overlay)
	active := activeList(t)
	if equality.Semantic.DeepEqual(next, t.status.Held) && equality.Semantic.DeepEqual(active, t.status.ResourceTags) {
		return nil
	}
	before := t.obj.DeepCopyObject().(client.Object)
	prevHeld, prevActive := t.status.Held, t.status.ResourceTags
	t.status.Held, t.status.ResourceTags = next, active
	if err := p.r.PatchStatus(ctx, t.obj, before); err != nil {
		t.status.Held, t.status.ResourceTags = prevHeld, prevActive
		return fmt.Errorf("%w: %w", errNotRecorded, err)
	}
	return nil
}

// errNotRecorded: the held tags could not be recorded before writing.
var errNotRecorded = errors.New("the tags this object holds could not be recorded in its status before writing, so nothing was written")

// unsent is the result of plans none of which was sent: every planned
// write fails with err.
func unsent(plans []Planned, err error) map[string]error {
	out := map[string]error{}
	for _, pl := range plans {
		if !pl.Plan.Patch.IsEmpty() {
			out[pl.Resource.ID] = err
		}
	}
	return out
}

// writeGrouped sends every non-empty plan to the cloud, resources that need the
// same change grouped into one TagWrite, and audits each mutation as it
// happens: a pending record before its first request, then its record and
// metric as soon as the cloud answered for it. When a record cannot be
// written and the audit fails closed, the provider starts no further
// request; o.auditErr keeps the sink's error (also probed when nothing is
// written). It returns the result per written resource ID.
func (p *pass) writeGrouped(ctx context.Context, provider cloud.ClassifiedProvider, t *target, plans []Planned, o *outcome) map[string]error {
	writes, byID := group(plans)
	if len(writes) == 0 {
		o.auditErr = p.r.audit.Probe()
		return nil
	}
	record := func(id string) audit.Write {
		pl := byID[id]
		return audit.Write{Object: kit.AuditObject(t.kind, t.obj), Cloud: t.cloud, Resource: pl.Resource.ID,
			NameCase: pl.Resource.Rules.NameCase(), Before: pl.Resource.Tags, Patch: pl.Plan.Patch}
	}
	results := kit.AuditedWrite(ctx, p.r.audit, p.r.Now, provider, writes, record, func(res cloud.WriteResult) {
		countMutation(t.cloud, byID[res.ID].Plan.Patch, res.Err)
	})
	p.st.wrote = p.r.Now() // changes before it may predate the writes
	o.auditErr = p.r.audit.Err()
	out := make(map[string]error, len(results))
	for _, res := range results {
		out[res.ID] = res.Err
		if res.Err == nil && len(res.Overridden) > 0 {
			p.recordModified(t, byID[res.ID], res.Overridden)
			if p.answered == nil {
				p.answered = map[string]tags.Set{}
			}
			p.answered[res.ID] = res.Overridden
		}
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

// tally counts the resources, records what each holds now and collects
// the failures.
func (o *outcome) tally(plans []Planned, results map[string]error, held *heldTags) {
	for _, pl := range plans {
		o.matched++
		if o.suspended != "" && !pl.Plan.Patch.IsEmpty() {
			// Not written: what it holds is unchanged.
			o.pending++
			o.wouldSet += len(pl.Plan.Patch.Set)
			o.wouldDelete += len(pl.Plan.Patch.Delete)
			continue
		}
		err, written := results[pl.Resource.ID]
		if written && err != nil {
			o.writeFailed(pl, err)
			continue
		}
		if written {
			o.writes++
		}
		held.replace(pl.Resource.ID, pl.Plan.Held)
		if len(pl.Plan.Skipped) == 0 {
			o.inSync++
			continue
		}
		o.skipped(pl)
	}
	sort.Slice(o.failures, func(i, j int) bool { return o.failures[i].Resource < o.failures[j].Resource })
}

// writeFailed records a resource whose write failed.
func (o *outcome) writeFailed(pl Planned, err error) {
	o.writeErrors++
	reason := ReasonWriteFailed
	switch d, throttled := cloud.RetryAfter(err); {
	case throttled:
		reason = ReasonThrottled
		o.retryAfter = max(o.retryAfter, d)
	case errors.Is(err, cloud.ErrTooManyTags):
		reason = ReasonOverLimit
	case errors.Is(err, errNotRecorded):
		reason = ReasonNotRecorded
		o.transient = true
	case !isPermanent(err):
		o.transient = true
	}
	names := append(pl.Plan.Patch.Set.Names(), pl.Plan.Patch.Delete...)
	o.failures = append(o.failures, v1alpha1.ResourceFailure{Resource: pl.Resource.ID, Tags: names, Reason: reason,
		Message: notify.Fit(err.Error())})
}

// isPermanent reports write errors that a retry does not cure.
func isPermanent(err error) bool {
	return errors.Is(err, cloud.ErrTooManyTags) || errors.Is(err, cloud.ErrForbidden) || errors.Is(err, cloud.ErrNotFound)
}

// skipped records a resource on which some requested tags were not applied.
func (o *outcome) skipped(pl Planned) {
	sk := pl.Plan.Skipped
	reason := skipReason(sk[0].Err)
	for _, s := range sk {
		if errors.Is(s.Err, tags.ErrTooManyTags) {
			o.policyHits++
			break
		}
	}
	msgs := make([]string, len(sk))
	for i, s := range sk {
		msgs[i] = s.Reason
	}
	o.failures = append(o.failures, v1alpha1.ResourceFailure{Resource: pl.Resource.ID, Tags: tags.SkippedNames(sk), Reason: reason,
		Message: notify.Fit(notify.Summary(msgs, 3))})
}

// skipReason names the kind of a skipped tag.
func skipReason(err error) string {
	switch {
	case errors.Is(err, tags.ErrTaken):
		return ReasonTagTaken
	case errors.Is(err, tags.ErrContested):
		return ReasonConflict
	case errors.Is(err, tags.ErrTooManyTags):
		return ReasonOverLimit
	case errors.Is(err, errMassDeletion):
		return v1alpha1.ReasonMassDeletion
	case errors.Is(err, errFighting):
		return ReasonFighting
	default:
		return ReasonInvalidForResource
	}
}
