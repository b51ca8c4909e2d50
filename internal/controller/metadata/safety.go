package metadata

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

// A full pass plans every target before it writes any, so that three
// safety controls can look at the whole pass between plan and write
// (safeguard):
//
//   - spec.suspend, of the CloudMetadata or of a request: the target's
//     plans are tallied (what a pass would write is counted and reported)
//     but nothing is sent and no tag is recorded as the object's.
//   - spec.deletionPolicy Retain on the CloudMetadata: every deletion a
//     delete opcode plans is taken out of the plans and counted.
//   - the mass-deletion guard (tags.GuardDeletions) over the pass's
//     planned deletions, one entry per resource, Synced being the
//     request's tags the resource carried before the pass (a request that
//     removes its one tag from a resource carrying fifty others still
//     removes all it asked of that resource), each tag's carriers being
//     the discovered resources that carry it, and the deletions of the
//     last hour's passes counting with the pass's own: the offending
//     deletions are held, unless the CloudMetadata's
//     ApproveDeletionsAnnotation equals the token of that exact set, which
//     its status recorded when the set was first held.
//
// Only a delete opcode deletes tags: add and update plans only set, and a
// tag left out of resourceTags, or an object removed, is released (left on
// the resources), never deleted. So the guard and Retain concern delete
// opcodes only.

// errMassDeletion is the error of a deletion held by the mass-deletion
// guard.
var errMassDeletion = errors.New("deletion held for approval")

// hold is the mass deletion a pass held, and what became of it.
type hold struct {
	md tags.MassDeletion
	// ids are the resources whose deletions are held.
	ids map[string]bool
	// record is the set as the status shows it (its since and token).
	record *v1alpha1.HeldDeletions
	// approved: the annotation carries the token, so the pass writes the
	// held deletions (of the targets not suspended); written: all of
	// them were written, so the hold clears.
	approved, written bool
}

// suspendedBy names what suspends the target's writes: its CloudMetadata
// or itself ("" when neither).
func (p *pass) suspendedBy(t *target) string {
	switch {
	case p.cm.Spec.Suspend:
		return fmt.Sprintf("CloudMetadata %q", p.cm.Name)
	case t.suspend:
		return t.kind + " " + fmt.Sprintf("%q", t.obj.GetName())
	}
	return ""
}

// safeguard applies suspend, Retain and the mass-deletion guard to the
// pass's plans, before anything is written.
func (p *pass) safeguard(planned []*targetPlan) {
	p.planned = planned
	deletionsHeldTotal.WithLabelValues(p.cm.Namespace, p.cm.Name, v1alpha1.ReasonMassDeletion).Add(0)
	if !p.cm.Spec.Deletes() {
		p.retain(planned)
		return
	}
	all, spread := plannedDeletions(planned)
	if len(all) == 0 {
		return
	}
	spread.Carriers = carriersOf(planned, spread.NameCase)
	spread.Recent = p.st.recent.Deletions.Recent(p.started)
	md := tags.GuardDeletions(all, spread)
	defer p.recordDeletions(all, md, spread.NameCase)
	if !md.Held() {
		return
	}
	p.hold = p.newHold(md)
	for _, tp := range planned {
		if p.hold.approved && tp.o.suspended == "" {
			continue
		}
		for i := range tp.plans {
			if pl := &tp.plans[i]; p.hold.ids[pl.Resource.ID] {
				tp.o.massHeld += holdDeletions(pl)
			}
		}
	}
	if !p.hold.approved {
		deletionsHeldTotal.WithLabelValues(p.cm.Namespace, p.cm.Name, v1alpha1.ReasonMassDeletion).Add(float64(md.Count()))
	}
}

// plannedDeletions are the pass's planned deletions, one entry per
// resource, and the name case of the cloud they are on.
func plannedDeletions(planned []*targetPlan) ([]tags.Deletions, tags.Spread) {
	var all []tags.Deletions
	var spread tags.Spread
	for _, tp := range planned {
		for _, pl := range tp.plans {
			if len(pl.Plan.Patch.Delete) > 0 {
				nc := pl.Resource.Rules.NameCase()
				spread.NameCase = nc
				all = append(all, tags.Deletions{Resource: pl.Resource.ID, Names: pl.Plan.Patch.Delete,
					Synced: requested(nc, pl.Resource.Tags, tp.o.t.resourceTags)})
			}
		}
	}
	return all, spread
}

// carriersOf counts, by nc's key of each tag, the discovered resources
// that carry it (a resource two targets found, once): only a pass that
// deletes needs it.
func carriersOf(planned []*targetPlan, nc tags.NameCase) map[string]int {
	out := map[string]int{}
	seen := map[string]bool{}
	for _, tp := range planned {
		for _, pl := range tp.plans {
			if seen[pl.Resource.ID] {
				continue
			}
			seen[pl.Resource.ID] = true
			for name := range pl.Resource.Tags {
				out[nc.Key(name)]++
			}
		}
	}
	return out
}

// requested counts the tags of have that the request names.
func requested(nc tags.NameCase, have tags.Set, request map[string]string) int {
	n := 0
	for name := range request {
		if have.Has(nc, name) {
			n++
		}
	}
	return n
}

// recordDeletions records in the window the deletions the pass may write: those
// md does not hold, or all of them once approved.
func (p *pass) recordDeletions(all []tags.Deletions, md tags.MassDeletion, nc tags.NameCase) {
	approved := p.hold != nil && p.hold.approved
	for _, d := range all {
		for _, name := range d.Names {
			if approved || !md.Has(nc, d.Resource, name) {
				p.st.recent.Deletions.Record(nc, d.Resource, []string{name}, p.started)
			}
		}
	}
}

// newHold keeps the since of the set the status records when it is the
// same set, and says whether the annotation approves it.
func (p *pass) newHold(md tags.MassDeletion) *hold {
	h := &hold{md: md, ids: map[string]bool{}}
	for _, d := range md.Deletions {
		h.ids[d.Resource] = true
	}
	h.record, h.approved = kit.HeldDeletions(p.cm, md, p.cm.Status.DeletionsHeld, p.started)
	return h
}

// holdDeletions takes a plan's deletions out of its patch, reports each
// as skipped for approval, and returns how many there were.
func holdDeletions(pl *Planned) int {
	n := len(pl.Plan.Patch.Delete)
	for _, name := range pl.Plan.Patch.Delete {
		pl.Plan.Skipped = append(pl.Plan.Skipped, tags.Skipped{Name: name, Err: errMassDeletion,
			Reason: fmt.Sprintf("%s not deleted: this pass would delete too much at once; it waits for approval (see the CloudMetadata's DeletionsHeld condition)", name)})
	}
	pl.Plan.Patch.Delete, pl.Plan.Expect = nil, nil
	return n
}

// retain takes every deletion out of the plans (deletionPolicy Retain)
// and counts them.
func (p *pass) retain(planned []*targetPlan) {
	for _, tp := range planned {
		for i := range tp.plans {
			pl := &tp.plans[i]
			if n := len(pl.Plan.Patch.Delete); n > 0 {
				tp.o.retained += n
				p.kept = append(p.kept, describeDeletions(pl.Resource.ID, pl.Plan.Patch.Delete))
				pl.Plan.Patch.Delete, pl.Plan.Expect = nil, nil
			}
		}
	}
	if n := p.retainedCount(); n > 0 {
		deletionsHeldTotal.WithLabelValues(p.cm.Namespace, p.cm.Name, v1alpha1.ReasonRetained).Add(float64(n))
	}
}

// retainedCount is how many deletions Retain kept in the pass.
func (p *pass) retainedCount() int {
	n := 0
	for _, tp := range p.planned {
		n += tp.o.retained
	}
	return n
}

// settleHold records, after the writes, whether an approved hold was
// written whole: then it clears. Otherwise it stays, with its token, for
// the next pass.
func (p *pass) settleHold(planned []*targetPlan) {
	h := p.hold
	if h == nil || !h.approved {
		return
	}
	for _, tp := range planned {
		if tp.o.suspended != "" {
			return
		}
		for _, f := range tp.o.failures {
			if h.ids[f.Resource] {
				return
			}
		}
	}
	h.written = true
	p.st.notes.Normal(p.cm, ReasonDeletionsApproved, fmt.Sprintf("approved with token %s: wrote %d held tag deletion(s) on %d resource(s)",
		h.record.Token, h.md.Count(), len(h.md.Deletions)))
}

// describeDeletions renders a resource's deletions for a message.
func describeDeletions(id string, names []string) string {
	return fmt.Sprintf("%s (%s)", shortID(id), strings.Join(names, ","))
}

// shortID is the end of a resource ID, enough to tell it in a message: an
// ARM ID's last type and name ("disks/os-0"), an ARN as it is.
func shortID(id string) string {
	i := strings.LastIndex(id, "/")
	if i <= 0 {
		return id
	}
	if j := strings.LastIndex(id[:i], "/"); j >= 0 && strings.HasPrefix(id, "/") {
		return id[j+1:]
	}
	return id
}

// approveCommand is the command that approves a hold of the pass's
// CloudMetadata.
func (p *pass) approveCommand(token string) string {
	return fmt.Sprintf("kubectl annotate cloudmetadata %s -n %s %s=%s --overwrite", p.cm.Name, p.cm.Namespace,
		v1alpha1.ApproveDeletionsAnnotation, token)
}

// holdMessage is the DeletionsHeld message of a mass deletion waiting for
// approval: the count, the reason, the command, then the deletions.
func (p *pass) holdMessage(h *hold) string {
	items := make([]string, len(h.md.Deletions))
	for i, d := range h.md.Deletions {
		items[i] = describeDeletions(d.Resource, d.Names)
	}
	return notify.Fit(fmt.Sprintf("%d tag deletion(s) on %d resource(s) held for approval since %s (%s). To write them once, run: %s. Held: %s",
		h.md.Count(), len(h.md.Deletions), h.record.Since.Format(time.RFC3339), h.md.Reason, p.approveCommand(h.record.Token),
		notify.Summary(items, 3)))
}

// retainMessage is the DeletionsHeld message of deletions Retain kept.
func (p *pass) retainMessage(n int) string {
	return notify.Fit(fmt.Sprintf("deletionPolicy is Retain: %d tag deletion(s) a delete opcode asked for on %d resource(s) were kept: %s",
		n, len(p.kept), notify.Summary(p.kept, 3)))
}
