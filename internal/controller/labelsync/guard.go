package labelsync

import (
	"fmt"
	"slices"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// The guard: a label sync pass removes a label from a Node when the host
// no longer has it, but not blindly. Removals of labels the sync never
// wrote (under a prefix new to it: the Node used the prefix before) and
// removals of one label from many Nodes at once or within an hour (hosts
// re-registered without a key) are held until a person approves the exact
// set, as the node sync's mass deletions are (tags.GuardDeletions). The
// labels a person added on a Node under a prefix the sync already owned
// are reverted as ever: within its prefixes the host is the source of
// truth.

// guard judges the pass's planned removals and returns those held, by
// Node. An upsert-only source removes nothing, so holds nothing.
func (p *pass) guard(works []*clusterWork) map[nodeKey][]string {
	if p.src.retain {
		return nil
	}
	var all []tags.Deletions
	carriers := map[string]int{}
	where := map[string]nodeKey{}
	for _, cw := range works {
		if cw == nil {
			continue
		}
		for _, hw := range cw.hosts {
			if hw.node == nil {
				continue
			}
			synced := 0
			for key := range hw.node.Labels {
				if tags.InSyncScope(key, p.src.prefixes) {
					carriers[key]++
					synced++
				}
			}
			names := slices.Concat(hw.plan.Removals, hw.plan.Unclear)
			contested := contestedKeys(hw.contests)
			names = slices.DeleteFunc(names, func(k string) bool { return slices.Contains(contested, k) })
			if len(names) == 0 {
				continue
			}
			id := fmt.Sprintf("node %s of cluster %s", hw.l.node, cw.cluster)
			where[id] = nodeKey{cluster: cw.cluster, node: hw.l.node}
			all = append(all, tags.Deletions{Resource: id, Synced: synced, Names: names, Unclear: hw.plan.Unclear})
		}
	}
	mass := tags.GuardDeletions(all, tags.Spread{NameCase: tags.CaseSensitive, Carriers: carriers, Recent: p.st.recent.Deletions.Recent(p.started)})
	held := map[nodeKey][]string{}
	if mass.Held() {
		p.out.held, p.out.approved = kit.HeldDeletions(p.src.obj, mass, p.heldBefore(), p.started)
		if !p.out.approved {
			for _, d := range mass.Deletions {
				held[where[d.Resource]] = append(held[where[d.Resource]], d.Names...)
			}
		}
	}
	if !p.src.suspended {
		for _, d := range all {
			for _, name := range d.Names {
				if !slices.Contains(held[where[d.Resource]], name) {
					p.st.recent.Deletions.Record(tags.CaseSensitive, d.Resource, []string{name}, p.started)
				}
			}
		}
	}
	return held
}

// heldBefore is the set the source's last pass held (nil: none): the same
// set keeps its approval token.
func (p *pass) heldBefore() *v1alpha1.HeldDeletions {
	if p.src.profile != nil && p.src.profile.Status.DeletionsHeld != nil {
		return p.src.profile.Status.DeletionsHeld
	}
	return p.st.held
}

// heldMessage is the DeletionsHeld condition's message and the Warning
// event's note for held removals.
func heldMessage(src *source, rec *v1alpha1.HeldDeletions) string {
	kind := "labelsyncprofile"
	if src.profile == nil {
		kind = "metal3cluster"
	}
	return kit.HeldNote("label removals", rec, kind+" "+src.obj.GetName()+" -n "+src.obj.GetNamespace(), shownInNotes)
}
