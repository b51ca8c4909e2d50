package nodetags

import (
	"fmt"
	"time"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

// held is what a pass kept back from its cloud writes: a mass deletion
// waiting for approval (mass; approved when the approval annotation named
// it), the deletions deletionPolicy Retain kept, and, while suspended, the
// writes not made.
type held struct {
	mass     tags.MassDeletion
	record   *v1alpha1.HeldDeletions // mass as the status shows it (nil: none held)
	approved bool
	retained int
	// suspendedWrites counts the cloud writes a suspended pass did not make.
	suspendedWrites int
}

// holdWrites removes from the plans' cloud writes what the pass must not
// write, in order: everything while suspended; every deletion under
// deletionPolicy Retain; a mass deletion (tags.GuardDeletions) unless
// approve accepts it. approve gets the mass deletion and returns its status
// record and whether the object's approval annotation names it.
func holdWrites(cfg syncConfig, plans []*resourcePlan, approve func(tags.MassDeletion) (*v1alpha1.HeldDeletions, bool)) held {
	var h held
	if cfg.suspend {
		for _, plan := range plans {
			if !plan.proposed.IsEmpty() {
				h.suspendedWrites++
				plan.proposed, plan.withheld = tags.Patch{}, true
			}
		}
		return h
	}
	nc := cfg.nameCase()
	if cfg.retain {
		for _, plan := range plans {
			h.retained += len(plan.proposed.Delete)
			plan.withheld = plan.withheld || len(plan.proposed.Delete) > 0
			plan.proposed = tags.Patch{Set: plan.proposed.Set}
		}
		return h
	}
	deletions := make([]tags.Deletions, 0, len(plans))
	for _, plan := range plans {
		if len(plan.proposed.Delete) > 0 {
			deletions = append(deletions, plannedDeletions(cfg, plan))
		}
	}
	h.mass = tags.GuardDeletions(deletions)
	if !h.mass.Held() {
		return h
	}
	h.record, h.approved = approve(h.mass)
	if h.approved {
		return h
	}
	for _, plan := range plans {
		var keep []string
		for _, name := range plan.proposed.Delete {
			if !h.mass.Has(nc, plan.resource.ID, name) {
				keep = append(keep, name)
			}
		}
		plan.withheld = plan.withheld || len(keep) < len(plan.proposed.Delete)
		plan.proposed = tags.Patch{Set: plan.proposed.Set, Delete: keep}
	}
	return h
}

// plannedDeletions are a plan's label-tag deletions (taint tags come and go
// with taints and are not counted) and its synced tags: the resource's tags
// in the sync's scope.
func plannedDeletions(cfg syncConfig, plan *resourcePlan) tags.Deletions {
	nc := cfg.nameCase()
	d := tags.Deletions{Resource: plan.resource.ID}
	for _, name := range plan.proposed.Delete {
		if !tags.IsTaintTag(nc, name) {
			d.Names = append(d.Names, name)
		}
	}
	for name := range cfg.filter.Apply(nc, orEmpty(plan.resource.Tags)) {
		if !tags.IsTaintTag(nc, name) {
			d.Synced++
		}
	}
	return d
}

// approval returns a function that records a mass deletion for nts's
// status and reports whether nts's approval annotation names it (see
// kit.HeldDeletions); prev is the last record of a held set (nil: none).
func approval(nts *v1alpha1.NodeTagSync, prev *v1alpha1.HeldDeletions, now time.Time) func(tags.MassDeletion) (*v1alpha1.HeldDeletions, bool) {
	return func(m tags.MassDeletion) (*v1alpha1.HeldDeletions, bool) { return kit.HeldDeletions(nts, m, prev, now) }
}

// heldMessage is the DeletionsHeld condition's message and the Warning
// event's note for a held mass deletion.
func heldMessage(nts *v1alpha1.NodeTagSync, rec *v1alpha1.HeldDeletions) string {
	var where []string
	for _, r := range rec.Resources {
		where = append(where, fmt.Sprintf("%s: %s", r.Resource, notify.Summary(r.Tags, shownInNotes)))
	}
	return fmt.Sprintf("%d tag deletions held, not written: %s (%s). If they are intended, approve this exact set once: "+
		"kubectl annotate nodetagsync %s %s=%s --overwrite",
		rec.Count, rec.Reason, notify.Summary(where, 5), nts.Name, v1alpha1.ApproveDeletionsAnnotation, rec.Token)
}
