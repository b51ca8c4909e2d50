package workloadtags

import (
	"sort"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// resourceState is where a resource stands after the plan.
type resourceState int

const (
	// stateFound: the resource was read; patch is what it lacks.
	stateFound resourceState = iota
	// statePending: the cloud does not show it yet.
	statePending
	// stateUnread: its read failed.
	stateUnread
	// stateShared: a backend many workloads share: never tagged.
	stateShared
)

// resourcePlan is the decision for one resource: what the policy asks of
// it, what it carries, and the patch that makes up the difference.
type resourcePlan struct {
	workload
	state resourceState
	// want is what the policy asks (rendered templates), contested keys
	// left out; contested names, per key, the policy that wants another
	// value.
	want      tags.Set
	contested map[string]string
	// before are the resource's tags as read, rules its tag rules.
	before tags.Set
	rules  tags.Rules
	// patch sets what differs (never deletes); skipped are the keys the
	// cloud's rules or tag limit left out.
	patch   tags.Patch
	skipped []tags.Skipped
	// fought are the keys left out of patch because another writer keeps
	// taking them away (fights.go).
	fought []string
}

// inSync reports whether the resource carries every key asked of it.
func (rp resourcePlan) inSync() bool {
	return rp.state == stateFound && rp.patch.IsEmpty() && len(rp.skipped) == 0 && len(rp.fought) == 0
}

// plan decides, for each workload's resource, what to write: the keys the
// policy's templates render for its workload and another policy of the
// same cloud that selects it does not want otherwise, set where the
// resource lacks them or carries another value. Nothing is ever deleted:
// keys a policy no longer asks for stay as they are. Resources the read
// did not find are pending, those it could not read unread.
func plan(cfg config, rivals []config, ws []workload, rd cloud.Reading) []resourcePlan {
	found := make(map[string]cloud.Classified, len(rd.Resources))
	for _, c := range rd.Resources {
		found[cloud.CanonicalID(c.ID)] = c
	}
	missing := idSet(rd.Missing)
	out := make([]resourcePlan, 0, len(ws))
	for _, w := range ws {
		rp := resourcePlan{workload: w}
		switch {
		case w.shared != "":
			rp.state = stateShared
			out = append(out, rp)
			continue
		case w.notYet:
			rp.state = statePending
			out = append(out, rp)
			continue
		}
		rp.want, rp.contested = wanted(cfg, rivals, w.w)
		c, ok := found[cloud.CanonicalID(w.id)]
		switch {
		case ok:
			rp.before, rp.rules = c.Tags, c.Rules
			rp.patch, rp.skipped = tags.Fit(c.Tags, tags.Patch{Set: rp.want}, c.Rules)
		case missing[cloud.CanonicalID(w.id)]:
			rp.state = statePending
		default:
			rp.state = stateUnread
		}
		out = append(out, rp)
	}
	return out
}

// wanted is what cfg asks of w's resource, without the keys a rival that
// also selects w wants with another value (named in contested).
func wanted(cfg config, rivals []config, w tags.Workload) (tags.Set, map[string]string) {
	want := cfg.want(w)
	var contested map[string]string
	for _, r := range rivals {
		if !r.selects(w) {
			continue
		}
		theirs := r.want(w)
		for _, k := range want.Names() {
			if v, ok := theirs.Get(cfg.nc, k); ok && v != want[k] {
				if contested == nil {
					contested = map[string]string{}
				}
				if _, named := contested[k]; !named {
					contested[k] = r.name
				}
			}
		}
	}
	for k := range contested {
		delete(want, k)
	}
	return want, contested
}

// idSet indexes IDs by CanonicalID.
func idSet(ids []string) map[string]bool {
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[cloud.CanonicalID(id)] = true
	}
	return out
}

// writes groups the patches: resources that need the same change share
// one TagWrite, so the cloud can write them in one call where it can.
func writes(plans []resourcePlan) []cloud.TagWrite {
	byKey := map[string]*cloud.TagWrite{}
	var keys []string
	for _, rp := range plans {
		if rp.state != stateFound || rp.patch.IsEmpty() {
			continue
		}
		k := rp.patch.Key()
		w, ok := byKey[k]
		if !ok {
			w = &cloud.TagWrite{Patch: rp.patch}
			byKey[k] = w
			keys = append(keys, k)
		}
		w.IDs = append(w.IDs, rp.id)
	}
	sort.Strings(keys)
	out := make([]cloud.TagWrite, len(keys))
	for i, k := range keys {
		out[i] = *byKey[k]
	}
	return out
}
