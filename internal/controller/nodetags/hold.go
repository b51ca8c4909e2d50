package nodetags

import (
	"maps"
	"slices"
	"time"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// The hold stage, between the planner and the applier: what the pass must
// not write is taken out of its plans across all of them at once —
// everything while suspended, every deletion under deletionPolicy Retain,
// and a mass or unclear deletion of tags or labels (tags.GuardDeletions)
// until a person approves it.

// held is what a pass kept back from its writes: a mass deletion
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
	// allowed are the deletions the pass may make (for the window of
	// later passes: DeletionLedger).
	allowed []tags.Deletions
	// fights are the restores left out because the tag keeps being
	// removed ("resource: tag").
	fights []string
}

// guardInput is what the mass-deletion guard knows beyond the pass's
// plans, by the name case's key of each tag: how many of the sync's
// resources carry it, and which lost it within the window before this
// pass (tags.Spread).
type guardInput struct {
	carriers map[string]int
	recent   map[string][]string
}

// holdWrites removes from the plans' writes what the pass must not make,
// in order: every cloud write while suspended; every deletion under
// deletionPolicy Retain; a mass or unclear deletion of tags or labels
// (tags.GuardDeletions) unless approve accepts it. approve gets the mass
// deletion and returns its status record and whether the object's
// approval annotation names it.
func holdWrites(cfg syncConfig, plans []*resourcePlan, g guardInput, approve func(tags.MassDeletion) (*v1alpha1.HeldDeletions, bool)) held {
	var h held
	if cfg.suspend {
		// What resuming would hold is listed now (status, tagsync plan):
		// the deletions that piled up meanwhile pass the guard then.
		if !cfg.retain {
			if h.mass, _ = guardMass(cfg, plans, g); h.mass.Held() {
				h.record, h.approved = approve(h.mass)
			}
		}
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
	var deletions []tags.Deletions
	h.mass, deletions = guardMass(cfg, plans, g)
	if h.mass.Held() {
		h.record, h.approved = approve(h.mass)
	}
	if !h.mass.Held() || h.approved {
		h.allowed = deletions
		return h
	}
	for _, plan := range plans {
		withhold(nc, plan, h.mass)
	}
	for _, d := range deletions {
		d.Names = slices.DeleteFunc(slices.Clone(d.Names), func(name string) bool { return h.mass.HasOn(nc, d.Labels, d.Resource, name) })
		if len(d.Names) > 0 {
			h.allowed = append(h.allowed, d)
		}
	}
	return h
}

// guardMass is what tags.GuardDeletions holds of the plans' deletions
// (plannedDeletions, also returned), given what the guard knows beyond
// them.
func guardMass(cfg syncConfig, plans []*resourcePlan, g guardInput) (tags.MassDeletion, []tags.Deletions) {
	nc := cfg.nameCase()
	deletions := plannedDeletions(cfg, plans)
	spread := tags.Spread{NameCase: nc, Carriers: maps.Clone(g.carriers), Recent: g.recent}
	if spread.Carriers == nil {
		spread.Carriers = map[string]int{}
	}
	for _, d := range deletions {
		if d.Labels { // the resource carried these until now
			for _, name := range d.Names {
				spread.Carriers[nc.Key(name)]++
			}
		}
	}
	return tags.GuardDeletions(deletions, spread), deletions
}

// withhold takes the deletions mass holds out of plan: its tag deletions
// from proposed, its label deletions into heldLabels (finish keeps them).
func withhold(nc tags.NameCase, plan *resourcePlan, mass tags.MassDeletion) {
	var keep []string
	for _, name := range plan.proposed.Delete {
		if !mass.Has(nc, plan.resource.ID, name) {
			keep = append(keep, name)
		}
	}
	for _, name := range labelDeletions(nc, plan) {
		if mass.HasOn(nc, true, plan.resource.ID, name) {
			plan.heldLabels = append(plan.heldLabels, name)
		}
	}
	plan.withheld = plan.withheld || len(keep) < len(plan.proposed.Delete) || len(plan.heldLabels) > 0
	plan.proposed = tags.Patch{Set: plan.proposed.Set, Delete: keep}
}

// plannedDeletions are the plans' label-tag deletions (taint tags come and
// go with taints and are not counted), with their unclear ones and each
// resource's synced tags (those in the sync's scope), and the tags whose
// labels the plans delete from Nodes, one entry per resource and side.
func plannedDeletions(cfg syncConfig, plans []*resourcePlan) []tags.Deletions {
	nc := cfg.nameCase()
	var out []tags.Deletions
	for _, plan := range plans {
		d := tags.Deletions{Resource: plan.resource.ID, Unclear: plan.unclear}
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
		if len(d.Names) > 0 {
			out = append(out, d)
		}
		if names := labelDeletions(nc, plan); len(names) > 0 {
			out = append(out, tags.Deletions{Resource: plan.resource.ID, Synced: d.Synced, Names: names, Labels: true})
		}
	}
	return out
}

// labelDeletions are the tags whose labels the plan's merges delete from
// one or more of its Nodes, sorted.
func labelDeletions(nc tags.NameCase, plan *resourcePlan) []string {
	var out []string
	for _, r := range plan.results {
		for _, name := range r.labels.NodePatch.Delete {
			if !slices.ContainsFunc(out, func(n string) bool { return nc.Key(n) == nc.Key(name) }) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// carriers counts, by the name case's key, the resources of a pass's
// snapshot placed for the sync that carry each synced tag.
func carriers(cfg syncConfig, placed map[string][]string, snap cloud.Snapshot) map[string]int {
	nc := cfg.nameCase()
	out := map[string]int{}
	for id := range placed {
		res, ok := snap.Resources[id]
		if !ok {
			continue
		}
		for name := range res.Tags { // every full pass: no copy of the tags
			if !tags.IsTaintTag(nc, name) && cfg.filter.Match(nc, name) {
				out[nc.Key(name)]++
			}
		}
	}
	return out
}

// approval returns a function that records a mass deletion for nts's
// status and reports whether nts's approval annotation names it (see
// kit.HeldDeletions); prev is the last record of a held set (nil: none).
func approval(nts *v1alpha1.NodeTagSync, prev *v1alpha1.HeldDeletions, now time.Time) func(tags.MassDeletion) (*v1alpha1.HeldDeletions, bool) {
	return func(m tags.MassDeletion) (*v1alpha1.HeldDeletions, bool) { return kit.HeldDeletions(nts, m, prev, now) }
}

// maxRestores is kit.MaxPutBacks: how many times within kit.RecentWindow
// one value is put back on one resource before the fight stops.
const maxRestores = kit.MaxPutBacks

// stopFights takes out of the plans' writes the restores of a tag put
// back maxRestores times within the window on that resource (restores
// says when), and returns them as "resource: tag", with the writer that
// last removed it where a cloud change named them. The labels stay; nothing is deleted.
func stopFights(restores kit.Restores, nc tags.NameCase, plans []*resourcePlan, now time.Time, writers kit.Writers) []string {
	restores.Prune(now)
	writers.Keep(restores)
	var stopped []string
	for _, plan := range plans {
		for _, name := range plan.restored {
			if len(restores[kit.RecentTag{Resource: plan.resource.ID, Tag: nc.Key(name)}]) < maxRestores || !plan.proposed.Set.Has(nc, name) {
				continue
			}
			plan.proposed = tags.Patch{Set: plan.proposed.Set.Without(nc, name), Delete: plan.proposed.Delete}
			plan.withheld = true
			f := plan.resource.ID + ": " + name
			if w := writers.Of(plan.resource.ID); w != "" {
				f += " (last removed by " + w + ")"
			}
			stopped = append(stopped, f)
		}
	}
	return stopped
}

// recordRestores notes the restores the plan's write made.
func recordRestores(restores *kit.Restores, nc tags.NameCase, plan *resourceResult, now time.Time) {
	for _, name := range plan.restoredWritten(nc) {
		restores.Add(kit.RecentTag{Resource: plan.resource.ID, Tag: nc.Key(name)}, now)
	}
}
