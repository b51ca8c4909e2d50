package metadata

import (
	"errors"
	"fmt"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// Under opcode add a request puts back a tag it holds that someone changed
// or removed. When another writer takes the same tag away from the same
// resource again and again (Azure Policy's modify effect, a platform's
// reconcile, a script), putting it back once more only starts another
// round: after maxRestores put-backs of one value within kit.RecentWindow
// the request stops writing that tag there, and the resource's failure
// says so (reason Fighting, naming the writer where a cloud change did).
// The count is kept in the CloudMetadata's status (status.recentWrites),
// so a new leader goes on counting.

// maxRestores is kit.MaxPutBacks: how many times within kit.RecentWindow
// one value is put back on one resource before the fight stops.
const maxRestores = kit.MaxPutBacks

// errFighting is the skip reason of a tag a request stopped putting back.
var errFighting = errors.New("another writer keeps changing or removing it")

// ReasonFighting: a resource's tag was put back maxRestores times within
// an hour and taken away again; the request stopped writing it there.
const ReasonFighting = "Fighting"

// stopFights takes out of the target's plans the tags whose put-back
// would be one more than maxRestores within the window (a put-back: a
// write of a name the request holds on the resource), and marks them
// skipped with errFighting.
func (p *pass) stopFights(tp *targetPlan) {
	p.st.recent.Restores.Prune(p.started)
	p.st.overridden.Prune(p.started) // tried again once the window passed
	for key := range p.st.fights {
		if len(p.st.recent.Restores[key]) < maxRestores {
			delete(p.st.fights, key) // over: its put-backs left the window
		}
	}
	for i := range tp.plans {
		pl := &tp.plans[i]
		held := tp.held.lookup(pl.Resource.ID)
		if held == nil {
			continue // holds nothing: no write of it is a put-back
		}
		nc := pl.Resource.Rules.NameCase()
		for _, name := range pl.Plan.Patch.Set.Names() {
			value := pl.Plan.Patch.Set[name]
			key := restoreKey(tp.o.t, pl.Resource.ID, nc, name, value)
			mod, modified := p.st.overridden.Of(key)
			if !held(name) || (len(p.st.recent.Restores[key]) < maxRestores && !modified) {
				continue
			}
			writer, known := p.st.fights[key]
			if w := p.carried[cloud.CanonicalID(pl.Resource.ID)].Named; w != "" {
				writer = w
			}
			if modified {
				writer = mod.Writer
			}
			if !known {
				// A new fight: the next pass is full, so that the status
				// and events report it (a targeted pass reports nothing),
				// and takes the resource as this pass read it.
				p.newFight = true
				p.fought = append(p.fought, pl.Resource)
			}
			if p.st.fights == nil {
				p.st.fights = map[kit.RecentTag]string{}
			}
			p.st.fights[key] = writer
			err := errFighting
			if writer != "" {
				err = fmt.Errorf("%w (%s)", errFighting, writer)
			}
			pl.Plan.Patch = tags.Patch{Set: pl.Plan.Patch.Set.Without(nc, name), Delete: pl.Plan.Patch.Delete}
			pl.Plan.Skipped = append(pl.Plan.Skipped, tags.Skipped{Name: name, Value: value,
				Reason: fightReason(name, err, modified), Err: err})
		}
	}
}

// recordRestores notes the put-backs the target's write made.
func (p *pass) recordRestores(tp *targetPlan, before map[string]func(string) bool, results map[string]error) {
	for _, pl := range tp.plans {
		err, wrote := results[pl.Resource.ID]
		held := before[pl.Resource.ID]
		if !wrote || err != nil || held == nil {
			continue
		}
		nc := pl.Resource.Rules.NameCase()
		for _, name := range pl.Plan.Patch.Set.Names() {
			if held(name) {
				p.st.recent.Restores.Add(restoreKey(tp.o.t, pl.Resource.ID, nc, name, pl.Plan.Patch.Set[name]), p.started)
			}
		}
	}
}

// heldBefore is, per resource of the target's plans, what the request
// held there before the write.
func heldBefore(tp *targetPlan) map[string]func(string) bool {
	out := make(map[string]func(string) bool, len(tp.plans))
	for _, pl := range tp.plans {
		out[pl.Resource.ID] = tp.held.lookup(pl.Resource.ID)
	}
	return out
}

// restoreKey is what put-backs are counted by: the target, the resource,
// and the name with the value put back (a new value, from a changed
// request, starts its own count).
func restoreKey(t *target, id string, nc tags.NameCase, name, value string) kit.RecentTag {
	return kit.RecentTag{Resource: cloud.CanonicalID(id), Tag: t.kind + "/" + t.obj.GetName() + ": " + nc.Key(name) + "=" + value}
}

// fightReason says why a tag is no longer written on a resource.
func fightReason(name string, err error, modified bool) string {
	if modified {
		return fmt.Sprintf("%s: %v: not written here again within %s", name, err, kit.RecentWindow)
	}
	return fmt.Sprintf("%s: %v: put back %d times within %s, no longer written here", name, err, maxRestores, kit.RecentWindow)
}

// recordModified notes the tags a write set that its answer carried with
// another value (kit.Overridden): the next pass stops writing them there,
// after this one write, not after maxRestores put-backs, and the failure
// names the policy.
func (p *pass) recordModified(t *target, pl Planned, overridden tags.Set) {
	nc := pl.Resource.Rules.NameCase()
	p.st.overridden.Note(p.started, pl.Plan.Patch.Set, overridden, func(name, value string) kit.RecentTag {
		return restoreKey(t, pl.Resource.ID, nc, name, value)
	})
}

// carryFought hands the resources whose fight this targeted pass found to
// the full pass that reports it, as this pass read them: the search index
// may still show them as the object's last write left them (the other
// writer undid it since), and the object trusts its own write until the
// index moves on, so the full pass would find nothing to report.
func (p *pass) carryFought() {
	now := p.r.Now()
	for _, r := range p.fought {
		id := cloud.CanonicalID(r.ID)
		p.r.index.changes.Pending.AddChange(p.key(), id, cloudchange.Change{Resource: r.ID, Tags: r.Tags, Time: now,
			Received: now, Writer: cloudchange.Writer{ID: p.carried[id].Named}})
	}
}
