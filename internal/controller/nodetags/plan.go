package nodetags

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// The planner: pure functions from a pass's nodes and cloud read to what
// the pass writes. It places the nodes on their resources, leaves out the
// nodes that are steady (steady marks, below), merges each remaining
// resource's nodes with its tags (decide), and holds back what the pass
// must not write (holdWrites, hold.go). It writes nothing and reports nothing: the
// pass's applier and reporter act on its plans, and `tagsync plan`
// (Predict) runs the same planner.

// planInput is what the planner needs besides the nodes and the cloud
// read: the pass's configuration and the NodeTagSync's generation, the
// steady marks of the last pass (nil: none, every node is merged), and
// which Nodes have a write of the controller in flight (nil: none).
type planInput struct {
	cfg        syncConfig
	generation int64
	steady     map[string]string
	inFlight   func(node, resourceVersion string) bool
	// people are the resources (canonical IDs) whose latest change the
	// cloud's event attributes to a person, with who (nil: none known).
	people map[string]string
}

// passPlan is what the planner made of a pass's nodes.
type passPlan struct {
	// plans are the resources to sync (not all their nodes steady), in
	// resource ID order.
	plans []*resourcePlan
	// unsynced are the nodes that cannot be synced: unmanaged ones, in
	// the nodes' order, then those whose resource could not be read.
	unsynced []unsynced
	// placed are the managed nodes by canonical resource ID, and notes
	// the placement notes of those that have one (the change index).
	placed map[string][]string
	notes  map[string]string
	// steady are the marks of the nodes still steady; steadyNodes counts
	// those left out of the merge (their whole resource steady), inFlight
	// the nodes left out because the cache does not show our write yet.
	steady                map[string]string
	steadyNodes, inFlight int
	// followers are the managed nodes whose own resource carries their
	// shared resource's synced tags too (Placement.Member), in the nodes'
	// order.
	followers []follower
}

// follower is a node placed on a shared resource (shared, canonical ID)
// whose own resource (member, canonical ID) carries its synced tags too.
type follower struct {
	node, shared, member string
}

// unsynced is a node a pass does not sync: unmanaged (reason says why), or
// failed (err) because its resource could not be read.
type unsynced struct {
	node   *cachedNode
	reason string
	err    error
	// notYet: the cloud does not show the node's resource yet but may
	// shortly (Placement.NotYet).
	notYet bool
}

// planPass is the planner's first step: it groups the managed nodes by the
// resource carrying their tags (canonical ID) and decides the plan of each
// resource whose nodes are not all steady (see decide), in ID order. The
// pass holds every resource's merge state at once, so that what it holds
// back (a mass deletion) is judged over the whole pass.
func planPass(in planInput, nodes []*cachedNode, snap cloud.Snapshot) passPlan {
	pp := passPlan{placed: map[string][]string{}, notes: map[string]string{}, steady: map[string]string{}}
	groups := map[string][]placed{}
	for _, node := range nodes {
		pl, ok := snap.Placements[node.Name]
		switch {
		case ok && pl.Err != nil:
			pp.unsynced = append(pp.unsynced, unsynced{node: node, reason: "its resource could not be read: " + pl.Err.Error(),
				err: fmt.Errorf("node %s: %w", node.Name, pl.Err)})
		case !ok || !pl.Managed:
			pp.unsynced = append(pp.unsynced, unsynced{node: node, reason: pl.Reason, notYet: pl.NotYet})
		default:
			id := cloud.CanonicalID(pl.Resource)
			pp.placed[id] = append(pp.placed[id], node.Name)
			if pl.Shared && pl.Member != "" {
				pp.followers = append(pp.followers, follower{node: node.Name, shared: id, member: cloud.CanonicalID(pl.Member)})
			}
			if pl.Note != "" {
				pp.notes[node.Name] = pl.Note
			}
			if in.inFlight != nil && in.inFlight(node.Name, node.ResourceVersion) {
				pp.inFlight++
				continue
			}
			groups[id] = append(groups[id], placed{node: node, note: pl.Note, shared: pl.Shared})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(groups)) {
		res, ok := snap.Resources[id]
		if !ok {
			for _, n := range groups[id] {
				pp.unsynced = append(pp.unsynced, unsynced{node: n.node, reason: "its resource " + id + " is missing from the cloud read",
					err: fmt.Errorf("node %s: its resource %s is missing from the cloud read", n.node.Name, id)})
			}
			continue
		}
		tagsHash := hashTags(res)
		members := pp.members(in, id, groups[id], tagsHash)
		if len(members) == 0 {
			continue // every node steady
		}
		plan := decide(in.cfg, res, members, in.people[id])
		plan.tagsHash = tagsHash
		plan.shared = slices.ContainsFunc(groups[id], func(n placed) bool { return n.shared })
		pp.plans = append(pp.plans, &plan)
	}
	return pp
}

// resourcePlan is what a pass decided for one cloud resource and the Nodes
// that sync with it.
type resourcePlan struct {
	resource cloud.Resource
	members  []*member
	// tagsHash is the hash of the resource's tags as read (steady marks);
	// shared is true when several Nodes share the resource (a scale set).
	tagsHash uint64
	shared   bool
	// results are the members' merges, in members' order (final after
	// finish).
	results []memberMerge
	// proposed is the cloud write decide chose (aggregated, fitted).
	proposed tags.Patch
	// cloudSkipped are cloud tags that cannot become labels.
	cloudSkipped []tags.Skipped
	// limitSkipped are writes the cloud's rules refused (limit, reserved).
	limitSkipped []tags.Skipped
	// aggConflicts are tags the Nodes of a shared resource disagree on.
	aggConflicts []tags.AggregateConflict
	// wiped is true when the cloud's tags were rewritten wholesale.
	wiped bool
	// restored are the tags the cloud lost that came from the Nodes (a
	// platform's rewrite), which proposed puts back; unclear are the
	// deletions in proposed that a person must approve (tags the Nodes
	// lost that did not come from them). Both as decide found them.
	restored, unclear []string
	// heldLabels are the label deletions the pass holds for approval
	// (holdWrites): finish keeps them and their base entries.
	heldLabels []string
	// person names the person the cloud says made the resource's latest
	// change ("": none known): the tags it lost are their deletions.
	person string
	// from is where the resource's synced tags came from, as its
	// members' bases and this pass's first copies say: the merge after
	// the write (settle) must not forget which side a tag it copied came
	// from.
	from tags.Sources
	// withheld is true when the pass kept part of proposed back (holdWrites):
	// the resource's Nodes are then not steady, so the next pass decides
	// again (and sees an approval).
	withheld bool
}

// decide is the pure first half of a resource's sync: every member merged
// with the resource's tags, their cloud proposals aggregated (a scale set's
// Nodes must agree) and fitted to the cloud's rules. plan.proposed is the
// cloud write; with nothing to write, the plan is final after finish.
func decide(cfg syncConfig, res cloud.Resource, members []*member, person string) resourcePlan {
	plan := resourcePlan{resource: res, members: members, person: person}
	plan.from = resourceSources(cfg, members)
	plan.results = mergeAll(cfg, res, members, &plan)
	all := []tags.Sources{plan.from}
	for _, r := range plan.results {
		all = append(all, r.labels.From())
	}
	plan.from = tags.Combine(cfg.nameCase(), all...)
	patch := aggregate(cfg, res, members, plan.results, &plan)
	plan.proposed, plan.limitSkipped = tags.Fit(res.Tags, patch, cfg.rules)
	plan.restored, plan.unclear = intents(cfg.nameCase(), plan.results, plan.proposed)
	return plan
}

// intents are the members' restored tags that proposed sets and their
// unclear deletions that proposed makes, each sorted, once.
func intents(nc tags.NameCase, results []memberMerge, proposed tags.Patch) (restored, unclear []string) {
	for _, r := range results {
		for _, name := range r.labels.Restored {
			if proposed.Set.Has(nc, name) && !slices.Contains(restored, name) {
				restored = append(restored, name)
			}
		}
		for _, name := range r.labels.Unclear {
			if slices.ContainsFunc(proposed.Delete, func(d string) bool { return nc.Key(d) == nc.Key(name) }) && !slices.Contains(unclear, name) {
				unclear = append(unclear, name)
			}
		}
	}
	slices.Sort(restored)
	slices.Sort(unclear)
	return restored, unclear
}

// steadyMark identifies the state in which a node was found in sync.
func steadyMark(node *cachedNode, tagsHash uint64, generation int64) string {
	return node.ResourceVersion + "/" + strconv.FormatUint(tagsHash, 36) + "/" + strconv.FormatInt(generation, 10)
}

// hashTags hashes a resource's tags (names and values exactly as stored).
func hashTags(res cloud.Resource) uint64 {
	h := fnv.New64a()
	for _, n := range res.Tags.Names() { // sorted
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write([]byte(res.Tags[n]))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// memberWrite is the copy of a shared resource's synced tags onto one of
// its members (Placement.Member: an Auto Scaling group's instance): patch
// sets what the member lacks or holds with another value, fitted to the
// cloud's limits (skipped: what does not fit).
type memberWrite struct {
	resource cloud.Resource // the member as read
	shared   string         // the shared resource's ID
	nodes    []string       // the nodes on the member
	patch    tags.Patch
	skipped  []tags.Skipped
}

// planMemberWrites is the planner's second step, once the shared
// resources are written: for every follower's member, the write that gives
// it the synced tags its shared resource carries after this pass's write
// (as read when the pass wrote nothing to it; none when that write failed,
// so the next pass decides again). Synced tags are those in the pass's
// scope (includeTags, excludeTags, the taint tags with syncTaints), less
// the shared resource's OwnOnly ones. Only set: a member's tag is deleted
// only by the shared resource's own write, where the provider does so
// (AWS: a group write deletes the tag on its instances where it still has
// the group's old value). Nothing when the pass does not write the cloud.
// The writes come in member ID order; a member in line gets none.
func planMemberWrites(cfg syncConfig, pp passPlan, results []*resourceResult, snap cloud.Snapshot) []memberWrite {
	if !cfg.direction.WritesCloud() || len(pp.followers) == 0 {
		return nil
	}
	plans := make(map[string]*resourceResult, len(results))
	for _, plan := range results {
		plans[cloud.CanonicalID(plan.resource.ID)] = plan
	}
	nodes := map[string][]string{}
	sharedOf := map[string]string{}
	for _, f := range pp.followers {
		nodes[f.member] = append(nodes[f.member], f.node)
		sharedOf[f.member] = f.shared
	}
	nc := cfg.nameCase()
	var out []memberWrite
	for _, id := range slices.Sorted(maps.Keys(nodes)) {
		shared, ok := snap.Resources[sharedOf[id]]
		res, found := snap.Resources[id]
		if !ok || !found {
			continue
		}
		cur := res.Tags
		if plan := plans[sharedOf[id]]; plan != nil {
			if plan.writeErr != nil {
				continue
			}
			if plan.wrote {
				// The provider gave the group's change to its instances
				// along with the group.
				shared.Tags = plan.resource.Tags
				set := plan.written.Set.Clone()
				maps.DeleteFunc(set, func(name, _ string) bool { return slices.Contains(shared.OwnOnly, name) })
				cur = tags.Patch{Set: set}.Apply(nc, orEmpty(cur))
			}
		}
		want := syncedTags(cfg, shared.Tags)
		patch := tags.Patch{Set: tags.Set{}}
		for name, v := range want {
			if slices.Contains(shared.OwnOnly, name) {
				continue
			}
			if old, ok := cur[name]; !ok || old != v {
				patch.Set[name] = v
			}
		}
		if len(patch.Set) == 0 {
			continue
		}
		fitted, skipped := tags.Fit(orEmpty(cur), patch, cfg.rules)
		if fitted.IsEmpty() && len(skipped) == 0 {
			continue
		}
		out = append(out, memberWrite{resource: cloud.Resource{ID: res.ID, Tags: cur}, shared: shared.ID, nodes: nodes[id],
			patch: fitted, skipped: skipped})
	}
	return out
}

// syncedTags are the tags of t in the pass's scope: those its filter
// keeps and, with syncTaints, the taint tags.
func syncedTags(cfg syncConfig, t tags.Set) tags.Set {
	cloudTags, taints := orEmpty(t), tags.Set(nil)
	if cfg.syncTaints {
		cloudTags, taints = tags.SplitTaintTags(cfg.nameCase(), cloudTags)
	}
	out := cfg.filter.Apply(cfg.nameCase(), orEmpty(cloudTags))
	for k, v := range taints {
		out[k] = v
	}
	return out
}
