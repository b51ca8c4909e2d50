package nodetags

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
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

// placed is a managed node, its placement note and whether its resource
// is shared.
type placed struct {
	node   *cachedNode
	note   string
	shared bool
}

// members decodes the nodes of one resource for the merge, except steady
// ones, which are counted. When some nodes of a resource are not steady,
// all are merged: a scale set's nodes aggregate together. A steady node is
// carried into this pass's marks whether or not it is merged.
func (pp *passPlan) members(in planInput, id string, nodes []placed, tagsHash uint64) []*member {
	steady := 0
	for _, n := range nodes {
		if n.note != "" {
			continue
		}
		if mark := steadyMark(n.node, tagsHash, in.generation); in.steady[n.node.Name] == mark {
			pp.steady[n.node.Name] = mark
			steady++
		}
	}
	if steady == len(nodes) {
		pp.steadyNodes += steady
		return nil
	}
	out := make([]*member, len(nodes))
	for i, n := range nodes {
		m, err := newMember(in.cfg, n.node, n.note)
		m.baseErr = err // reported: the node is treated as new
		m.resource = id
		out[i] = m
	}
	return out
}

// readBase returns the Node's stored base; ok is false when there is none.
// A malformed annotation is reported and treated as no history, which can
// only add, never delete.
func readBase(node *cachedNode) (base tags.Base, ok bool, err error) {
	raw, found := node.Annotations[v1alpha1.LastSyncedTagsAnnotation]
	if !found {
		return tags.Base{}, false, nil
	}
	base, err = tags.ParseBase(raw)
	if err != nil {
		return tags.Base{}, false, fmt.Errorf("annotation %s on node %s: %v; treating the node as new", v1alpha1.LastSyncedTagsAnnotation, node.Name, err)
	}
	return base, true, nil
}

// member is one managed Node in a sync pass, with its side of the merge.
type member struct {
	node *cachedNode
	// stored is the Node's stored base as read (its Origin, Legacy and
	// Former); hasBase is false when there is none.
	stored  tags.Base
	hasBase bool
	// base and baseTaints are the stored base's tags in scope, split into
	// label tags and taint tags (syncTaints); mergeBases decides whether
	// they are a base for this pass's configuration.
	base       tags.Set
	baseTaints tags.Set
	baseText   string   // the annotation as found
	nodeTags   tags.Set // managed labels decoded, filtered
	taintTags  tags.Set // the node's taints as tags (syncTaints)
	skipped    []tags.Skipped
	note       string // placement note (e.g. a fallback to the scale set)
	resource   string // the canonical ID of the resource it syncs with
	// baseErr is why the stored base could not be read (nil: it could,
	// or there is none): reported, and the node is treated as new.
	baseErr error
}

// newMember decodes a Node's managed labels and stored base.
func newMember(cfg syncConfig, node *cachedNode, note string) (*member, error) {
	m := &member{node: node, baseText: node.Annotations[v1alpha1.LastSyncedTagsAnnotation], note: note}
	stored, ok, err := readBase(node)
	if ok {
		rest, taints := tags.SplitTaintTags(cfg.nameCase(), stored.Tags)
		m.stored, m.hasBase = stored, true
		m.base = cfg.filter.Apply(cfg.nameCase(), orEmpty(rest))
		if cfg.syncTaints {
			m.baseTaints = orEmpty(taints)
		}
	}
	if cfg.syncTaints {
		m.taintTags = taintTags(node)
	}
	decoded, skipped := cfg.codec.FromLabels(node.Labels)
	m.nodeTags = cfg.filter.Apply(cfg.nameCase(), decoded)
	m.skipped = skipped
	return m, err
}

// mergeBases are the member's merge bases (labels, taints) under the
// pass's configuration, given the cloud's tags and taint tags in scope:
// the stored ones when the same configuration made them, none (nil) when
// another did, and a legacy base's entries both sides still hold (see
// tags.Base.For).
func (m *member) mergeBases(cfg syncConfig, cloudTags, cloudTaints tags.Set) (labels, taints tags.Set) {
	if !m.hasBase {
		return nil, nil
	}
	nc := cfg.nameCase()
	b := m.stored
	b.Tags = m.base
	o := m.origin(cfg)
	labels, _ = b.For(o, nc, cloudTags, m.nodeTags)
	if cfg.syncTaints {
		b.Tags = m.baseTaints
		taints, _ = b.For(o, nc, orEmpty(cloudTaints), orEmpty(m.taintTags))
	}
	return labels, taints
}

// origin is the configuration the member's base is made under: the
// pass's, with the member's resource.
func (m *member) origin(cfg syncConfig) tags.Origin { return cfg.origin.OnResource(m.resource) }

// sources are where the member's stored base says its tags came from, when
// that base was agreed with the same resource by the same sync (nil:
// nothing known).
func (m *member) sources(cfg syncConfig) tags.Sources {
	o := m.stored.Origin
	if !m.hasBase || m.stored.Legacy || o.Sync != cfg.origin.Sync || o.Provider != cfg.origin.Provider ||
		!strings.EqualFold(o.Resource, m.resource) {
		return nil
	}
	return m.stored.From
}

// resourceSources are where the tags of a resource came from, as its
// members' bases record them (tags.Combine): the Nodes of a scale set
// share what they know, so a Node that joined later knows that a tag came
// from another Node's label.
func resourceSources(cfg syncConfig, members []*member) tags.Sources {
	all := make([]tags.Sources, len(members))
	for i, m := range members {
		all[i] = m.sources(cfg)
	}
	return tags.Combine(cfg.nameCase(), all...)
}

// former are the labels the member still carries under an earlier label
// prefix: those of its stored base when that base was made under another
// prefix, else those its base still lists (nil: none).
func (m *member) former(cfg syncConfig) *tags.Former {
	switch {
	case !m.hasBase || m.stored.Legacy:
		return nil
	case m.stored.Origin.Prefix != cfg.origin.Prefix:
		rest, _ := tags.SplitTaintTags(cfg.nameCase(), m.stored.Tags)
		if len(rest) == 0 {
			return nil
		}
		return &tags.Former{Prefix: m.stored.Origin.Prefix, Tags: rest}
	case m.stored.Former != nil && m.stored.Former.Prefix != cfg.origin.Prefix:
		return m.stored.Former
	}
	return nil
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
	// writeErr is the cloud write's error, if it failed.
	writeErr error
	// wrote is true when the cloud was written; written is what.
	wrote   bool
	written tags.Patch
	// nodes are the applier's records of the members' Node writes, in
	// members' order; labelled counts the Nodes whose labels it wrote, the
	// first of them with firstLabels.
	nodes       []nodeResult
	labelled    int
	firstLabels tags.LabelChanges
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

// settle records the cloud write's outcome: on success the members are
// merged again against written, the resource's tags after the write.
func (plan *resourcePlan) settle(cfg syncConfig, written cloud.Resource, err error) {
	if err != nil {
		plan.writeErr = err
		return
	}
	plan.wrote, plan.written = true, plan.proposed
	plan.resource = written
	plan.results = mergeAll(cfg, written, plan.members, plan)
}

// finish keeps, for whatever cloud change is still proposed (not written: a
// disagreement, a limit, a failure) and for the label deletions held, the
// members' bases so it is retried.
func (plan *resourcePlan) finish(nc tags.NameCase) {
	for i, res := range plan.results {
		res = res.unwritten()
		if len(plan.heldLabels) > 0 {
			res.labels = res.labels.RestrictNode(withoutNames(nc, tags.Patch(res.labels.NodePatch), plan.heldLabels))
		}
		plan.results[i] = res
	}
}

// untroubled reports whether the plan wrote nothing to the cloud and found
// nothing to report about the resource: its nodes may then be steady.
func (plan resourcePlan) untroubled() bool {
	return !plan.wrote && plan.writeErr == nil && !plan.wiped && !plan.withheld && len(plan.cloudSkipped) == 0 &&
		len(plan.limitSkipped) == 0 && len(plan.aggConflicts) == 0
}

// mergeAll runs the three-way merge for every member against res's tags:
// labels both ways as configured, and (syncTaints) the node's taints one way
// to the cloud.
func mergeAll(cfg syncConfig, res cloud.Resource, members []*member, plan *resourcePlan) []memberMerge {
	cloudTags, cloudTaints := res.Tags, tags.Set(nil)
	if cfg.syncTaints {
		cloudTags, cloudTaints = tags.SplitTaintTags(cfg.nameCase(), res.Tags)
	}
	cloudTags = cfg.filter.Apply(cfg.nameCase(), orEmpty(cloudTags))
	_, plan.cloudSkipped = cfg.codec.ToLabels(cloudTags)
	cloudHold := tags.SkippedNames(plan.cloudSkipped)
	results := make([]memberMerge, len(members))
	for i, m := range members {
		base, baseTaints := m.mergeBases(cfg, cloudTags, cloudTaints)
		results[i].labels = tags.Merge(cfg.nameCase(), tags.MergeInput{
			Base:  base,
			Cloud: cloudTags,
			Node:  m.nodeTags,
			From:  plan.from,
			// A person's removal crosses over whatever side the tag came from.
			RemovedByPerson: plan.person != "",
			Direction:       cfg.direction,
			Policy:          cfg.policy,
			Hold:            append(slices.Clone(cloudHold), tags.SkippedNames(m.skipped)...),
		})
		if cfg.syncTaints {
			results[i].taints = tags.Merge(cfg.nameCase(), tags.MergeInput{
				Base: baseTaints, Cloud: orEmpty(cloudTaints), Node: orEmpty(m.taintTags),
				Direction: tags.NodeToCloud, Policy: tags.NodeWins,
			})
		}
		plan.wiped = plan.wiped || results[i].labels.Wiped
	}
	return results
}

// memberMerge is one member's merge: its labels and, with syncTaints, its
// taints (whose names never overlap: taint tags carry TaintTagPrefix).
type memberMerge struct {
	labels tags.MergeResult
	taints tags.MergeResult
}

// cloudPatch is everything the member proposes for the cloud.
func (mm memberMerge) cloudPatch() tags.Patch {
	p := mm.labels.CloudPatch
	t := mm.taints.CloudPatch
	if t.IsEmpty() {
		return p
	}
	out := tags.Patch{Set: p.Set.Clone(), Delete: append(slices.Clone(p.Delete), t.Delete...)}
	for k, v := range t.Set {
		if out.Set == nil {
			out.Set = tags.Set{}
		}
		out.Set[k] = v
	}
	slices.Sort(out.Delete)
	return out
}

// unwritten keeps the bases of cloud changes that were not written.
func (mm memberMerge) unwritten() memberMerge {
	return memberMerge{labels: mm.labels.RestrictCloud(tags.Patch{}), taints: mm.taints.RestrictCloud(tags.Patch{})}
}

// conflicts lists both merges' conflicts.
func (mm memberMerge) conflicts() []tags.Conflict {
	return append(slices.Clone(mm.labels.Conflicts), mm.taints.Conflicts...)
}

func orEmpty(s tags.Set) tags.Set {
	if s == nil {
		return tags.Set{}
	}
	return s
}

// taintTags renders a node's taints as tags.
func taintTags(node *cachedNode) tags.Set {
	taints := make([]tags.Taint, 0, len(node.Spec.Taints))
	for _, t := range node.Spec.Taints {
		if !kit.IsTaint(t, v1alpha1.NodeTagsPendingTaintKey) { // tagsync's own, gone once synced
			taints = append(taints, tags.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
		}
	}
	return tags.TaintTags(taints)
}

// aggregate combines the members' cloud proposals into one patch; for a
// resource shared by several Nodes, disagreeing proposals are conflicts and
// are not written.
func aggregate(cfg syncConfig, res cloud.Resource, members []*member, results []memberMerge, plan *resourcePlan) tags.Patch {
	proposals := make([]tags.NodeProposal, len(results))
	proposing := false
	for i, r := range results {
		p := r.cloudPatch()
		proposing = proposing || !p.IsEmpty()
		proposals[i] = tags.NodeProposal{Node: members[i].node.Name, Patch: p, Holds: members[i].nodeTags}
	}
	if !proposing {
		return tags.Patch{}
	}
	agg := tags.Aggregate(cfg.nameCase(), res.Tags, proposals)
	plan.aggConflicts = agg.Conflicts
	return agg.Patch
}

// nodeUpdateFor turns a member's final merge into the Node change: the label
// edits (under deletionPolicy Retain without deletions, which it returns as
// retained), the removal of labels moved from an earlier prefix, and, when
// it changed, the new base.
func nodeUpdateFor(cfg syncConfig, m *member, mm memberMerge) (nodeUpdate, []tags.Skipped) {
	result := mm.labels
	var retained []string
	if cfg.retain && len(result.NodePatch.Delete) > 0 {
		retained = result.NodePatch.Delete
		result = result.RestrictNode(tags.Patch{Set: result.NodePatch.Set})
	}
	changes, skipped := cfg.codec.LabelChanges(m.node.Labels, result.NodePatch)
	if len(skipped) > 0 {
		result = result.RestrictNode(withoutNames(cfg.nameCase(), result.NodePatch, tags.SkippedNames(skipped)))
	}
	base := result.NewBase.Clone()
	for k, v := range mm.taints.NewBase {
		if base == nil {
			base = tags.Set{}
		}
		base[k] = v
	}
	former := m.former(cfg)
	if cfg.direction.WritesNodes() && !cfg.retain {
		changes, former = moveLabels(cfg, m.node.Labels, changes, former)
	}
	u := nodeUpdate{labels: changes, retained: retained}
	if text := (tags.Base{Origin: m.origin(cfg), Tags: base, From: result.From(), Former: former}).Encode(); text != m.baseText {
		u.base = text
	}
	return u, skipped
}

// moveLabels adds to changes the removal of each label former lists whose
// tag now has its label under the current prefix (already there, or set by
// changes), and returns what is still to be moved (nil: nothing). A former
// label that is gone, or that someone changed since tagsync wrote it, is no
// longer tagsync's: it is left alone and forgotten.
func moveLabels(cfg syncConfig, labels map[string]string, changes tags.LabelChanges, former *tags.Former) (tags.LabelChanges, *tags.Former) {
	if former == nil {
		return changes, nil
	}
	old := tags.Codec{Prefix: former.Prefix, Rules: &cfg.rules}
	left := tags.Set{}
	for _, name := range former.Tags.Names() {
		written, _ := old.ToLabels(tags.Set{name: former.Tags[name]})
		for key, value := range written {
			if labels[key] != value || cfg.codec.IsManaged(key) {
				continue
			}
			if hasLabelAfter(cfg, labels, changes, name) {
				changes.Delete = append(changes.Delete, key)
			} else {
				left[name] = former.Tags[name]
			}
		}
	}
	slices.Sort(changes.Delete)
	if len(left) == 0 {
		return changes, nil
	}
	return changes, &tags.Former{Prefix: former.Prefix, Tags: left}
}

// hasLabelAfter reports whether the Node carries tag name's label under
// the current prefix once changes are applied.
func hasLabelAfter(cfg syncConfig, labels map[string]string, changes tags.LabelChanges, name string) bool {
	key, err := cfg.codec.LabelKey(name)
	if err != nil {
		return false
	}
	if _, ok := changes.Set[key]; ok {
		return true
	}
	_, ok := labels[key]
	return ok && !slices.Contains(changes.Delete, key)
}

// withoutNames returns p without operations on the given names (matched as nc
// says).
func withoutNames(nc tags.NameCase, p tags.Patch, names []string) tags.Patch {
	drop := map[string]bool{}
	for _, n := range names {
		drop[nc.Key(n)] = true
	}
	out := tags.Patch{}
	for k, v := range p.Set {
		if !drop[nc.Key(k)] {
			if out.Set == nil {
				out.Set = tags.Set{}
			}
			out.Set[k] = v
		}
	}
	for _, k := range p.Delete {
		if !drop[nc.Key(k)] {
			out.Delete = append(out.Delete, k)
		}
	}
	return out
}

// memberUpdate is the whole change a pass makes to a member's Node: the
// label edits and new base of its final merge, and the pending taint's
// removal.
func memberUpdate(cfg syncConfig, m *member, mm memberMerge) (nodeUpdate, []tags.Skipped) {
	u, skipped := nodeUpdateFor(cfg, m, mm)
	u.taints = kit.ReleaseTaint(m.node.Spec.Taints, v1alpha1.NodeTagsPendingTaintKey)
	return u, skipped
}

// A node that a pass found fully in sync (nothing to write on either side,
// no conflict, nothing unrepresentable) stays in sync while neither the
// Node, nor its resource's tags, nor the NodeTagSync's spec change. The next
// pass then counts it as synced without decoding its labels or merging: at
// 10,000 nodes most of a resync's work and allocation.
//
// A steady mark is the node's resourceVersion, a hash of the resource's tags
// and the spec's generation. Each pass keeps only the marks of the nodes it
// saw, so nodes that left (deleted, deselected) are forgotten.

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
func planMemberWrites(cfg syncConfig, pp passPlan, snap cloud.Snapshot) []memberWrite {
	if !cfg.direction.WritesCloud() || len(pp.followers) == 0 {
		return nil
	}
	plans := make(map[string]*resourcePlan, len(pp.plans))
	for _, plan := range pp.plans {
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
