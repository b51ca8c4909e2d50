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
	var nodes []nodeRemovals
	for _, cw := range works {
		if cw == nil {
			continue
		}
		for _, hw := range cw.hosts {
			if hw.node == nil {
				continue
			}
			contested := contestedKeys(hw.contests)
			names := slices.DeleteFunc(slices.Concat(hw.plan.Removals, hw.plan.Unclear), func(k string) bool { return slices.Contains(contested, k) })
			nodes = append(nodes, nodeRemovals{key: nodeKey{cluster: cw.cluster, node: hw.l.node}, labels: hw.node.Labels,
				names: names, unclear: hw.plan.Unclear})
		}
	}
	j := judgeRemovals(nodes, p.src.prefixes, p.st.recent.Deletions.Recent(p.started))
	held := map[nodeKey][]string{}
	if j.mass.Held() {
		p.out.held, p.out.approved = kit.HeldDeletions(p.src.obj, j.mass, p.heldBefore(), p.started)
		if !p.out.approved {
			held = j.held()
		}
	}
	if !p.src.suspended {
		for _, d := range j.all {
			for _, name := range d.Names {
				if !slices.Contains(held[j.where[d.Resource]], name) {
					p.st.recent.Deletions.Record(tags.CaseSensitive, d.Resource, []string{name}, p.started)
				}
			}
		}
	}
	return held
}

// nodeRemovals is one Node's planned label removals, as the guard judges
// them.
type nodeRemovals struct {
	key nodeKey
	// labels are the Node's labels as read.
	labels map[string]string
	// names are the removals (Unclear ones included, contested ones left
	// out), unclear those the sync never wrote.
	names, unclear []string
}

// judgement is the guard's verdict on one pass's removals.
type judgement struct {
	mass tags.MassDeletion
	// all are the removals judged, by resource ("node n of cluster c"),
	// and where the Node each names.
	all   []tags.Deletions
	where map[string]nodeKey
}

// judgeRemovals runs the mass-deletion guard over the Nodes' removals: a
// label's carriers are the Nodes that hold it under prefixes, recent the
// deletions of the last hour's passes (DeletionLedger.Recent). Pure: the
// pass and `tagsync plan` judge alike.
func judgeRemovals(nodes []nodeRemovals, prefixes []string, recent map[string][]string) judgement {
	j := judgement{where: map[string]nodeKey{}}
	carriers := map[string]int{}
	for _, n := range nodes {
		synced := 0
		for key := range n.labels {
			if tags.InSyncScope(key, prefixes) {
				carriers[key]++
				synced++
			}
		}
		if len(n.names) == 0 {
			continue
		}
		id := fmt.Sprintf("node %s of cluster %s", n.key.node, n.key.cluster)
		j.where[id] = n.key
		j.all = append(j.all, tags.Deletions{Resource: id, Synced: synced, Names: n.names, Unclear: n.unclear})
	}
	j.mass = tags.GuardDeletions(j.all, tags.Spread{NameCase: tags.CaseSensitive, Carriers: carriers, Recent: recent})
	return j
}

// held returns the removals the verdict holds, by Node.
func (j judgement) held() map[nodeKey][]string {
	held := map[nodeKey][]string{}
	for _, d := range j.mass.Deletions {
		held[j.where[d.Resource]] = append(held[j.where[d.Resource]], d.Names...)
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
