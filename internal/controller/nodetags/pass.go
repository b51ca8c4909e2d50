package nodetags

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
)

// pass is one sync pass over a NodeTagSync's nodes. Everything that belongs
// to one pass (its notifier, counters, outcome) lives here, never on the
// Reconciler, so passes of different NodeTagSyncs cannot mix.
type pass struct {
	r     *Reconciler
	nts   *v1alpha1.NodeTagSync
	cfg   syncConfig
	st    *syncState
	notes *notify.Notifier
	out   *outcome
	start time.Time
	// nextSteady are the steady marks this pass found (see steady.go).
	nextSteady map[string]string
	// placed are the managed nodes this pass found, by canonical resource
	// ID, for the change index (changes.go).
	placed map[string][]string
	// placeNotes are the placement notes of the managed nodes that have one.
	placeNotes map[string]string
	// health is the event sources' health (nil: events off), reported in
	// the status; changesPending makes a full pass read fresh because
	// cloud changes are waiting for it.
	health         *cloudchange.Health
	changesPending bool
	// complete is set when the pass read the cloud and synced every node
	// it could.
	complete bool
	// targeted is set for a pass over the nodes of changed resources only
	// (targeted.go).
	targeted bool
}

func (r *Reconciler) newPass(nts *v1alpha1.NodeTagSync, cfg syncConfig, st *syncState) *pass {
	return &pass{r: r, nts: nts, cfg: cfg, st: st, notes: st.notes, out: &outcome{}, start: r.Now(),
		nextSteady: map[string]string{}, placed: map[string][]string{}, placeNotes: map[string]string{}}
}

// run reads the nodes and the cloud, syncs every resource, writes Nodes and
// the status, and schedules the next pass.
func (p *pass) run(ctx context.Context) (reconcile.Result, error) {
	r, nts := p.r, p.nts
	sel, err := p.selectNodes(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	syncs, claimants, items, claimed := sel.syncs, sel.claimants, sel.items, sel.claimed
	p.warnAboutSpec()
	fresh := r.freshRead(nts, p.st, p.cfg.resync) || p.changesPending
	snap, err := p.cfg.provider.Snapshot(ctx, cloudNodes(items), cloud.ReadOptions{
		Target: p.cfg.target, Fresh: fresh, Scopes: p.cfg.resourceGroups,
	})
	if err != nil {
		return p.readFailed(ctx, fresh, err)
	}
	if fresh {
		// Failed scopes are not cached by the provider, so the next pass
		// reads them again anyway; the healthy ones may come from its cache.
		r.markRead(nts, p.st, p.start)
	}
	p.reportReadFailures(snap.Failed)
	p.syncAll(ctx, items, snap)
	p.st.steady = p.nextSteady
	r.changes.record(nts.Name, p.placed, p.placeNotes, r.Now()) // after the read and the writes
	p.complete = len(snap.Failed) == 0
	if len(claimants) == 0 {
		p.reportUnselectedPending(ctx, syncs)
	}
	p.out.claimed = claimed
	if err := p.finish(ctx, fresh, snap.Failed); err != nil {
		return reconcile.Result{}, err
	}
	return p.next()
}

// selection is what a pass syncs: the nodes its selector picks that no
// older NodeTagSync claims (items; claimed counts the others), with every
// valid NodeTagSync and the older ones that claim nodes.
type selection struct {
	items            []*cachedNode
	claimed          int
	syncs, claimants []validSync
}

// selectNodes lists the nodes and NodeTagSyncs and picks the pass's nodes.
func (p *pass) selectNodes(ctx context.Context) (selection, error) {
	nodes, err := p.r.nodes.list(ctx, p.cfg.selector)
	if err != nil {
		return selection{}, fmt.Errorf("listing nodes: %w", err)
	}
	syncs, err := p.r.validSyncs(ctx)
	if err != nil {
		return selection{}, err
	}
	sel := selection{syncs: syncs, claimants: olderClaimants(syncs, p.nts)}
	sel.items, sel.claimed = withoutClaimed(nodes, sel.claimants)
	return sel, nil
}

// finish closes the pass: forgets resolved problems (after a complete pass),
// publishes metrics, logs a summary and writes the status.
func (p *pass) finish(ctx context.Context, fresh bool, failed []cloud.ScopeError) error {
	nts, o := p.nts, p.out
	p.notes.EndPass(len(failed) == 0)
	o.record(nts.Name)
	// A pass that could not read a scope or write a node or resource
	// failed, though it synced the others.
	result := "ok"
	if len(failed) > 0 || o.errors > 0 {
		result = "error"
	} else {
		lastSuccessGauge.WithLabelValues(nts.Name).Set(float64(p.r.Now().Unix()))
	}
	passesTotal.WithLabelValues(nts.Name, fmt.Sprint(fresh), result).Inc()
	passDuration.WithLabelValues(nts.Name).Observe(p.r.Now().Sub(p.start).Seconds())
	log.FromContext(ctx).V(1).Info("sync pass done", "fresh", fresh, "synced", o.synced, "unmanaged", o.unmanaged,
		"conflicts", len(o.conflicts), "errors", o.errors, "cloudWrites", o.cloudWrites, "nodeWrites", o.nodeWrites)
	st := o.status(nts, p.st.lastStatus, p.cfg, failed, fresh, p.start)
	p.setEventsCondition(&st)
	return p.r.writeStatus(ctx, nts, st, p.st)
}

// next schedules the next pass: after the cloud's Retry-After when it
// throttled us, with the workqueue's backoff after other errors (what
// succeeded is not redone), soon while our own writes are in flight, else at
// the next resync.
func (p *pass) next() (reconcile.Result, error) {
	o := p.out
	if wait, ok := cloud.RetryAfter(o.err()); ok {
		return reconcile.Result{RequeueAfter: max(wait, time.Second)}, nil
	}
	p.st.backoff.Reset()
	if o.errors > 0 {
		return reconcile.Result{}, fmt.Errorf("%d nodes could not be synced; first error: %s", o.errors, o.firstError)
	}
	if o.inFlight > 0 {
		// Our own writes have not reached the cache yet; their watch events
		// normally trigger the next pass, this is the safety net.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	return reconcile.Result{RequeueAfter: p.r.nextPass(p.st, p.cfg.resync)}, nil
}

// readFailed ends a pass whose cloud read could not run at all: nothing was
// written, the status says why, and the pass is retried (after the cloud's
// Retry-After when it throttled us).
func (p *pass) readFailed(ctx context.Context, fresh bool, err error) (reconcile.Result, error) {
	passesTotal.WithLabelValues(p.nts.Name, fmt.Sprint(fresh), "error").Inc()
	p.notes.Once(p.nts, "read", ReasonCloudReadFailed, "reading the cloud failed, nothing was written: "+err.Error())
	p.notes.EndPass(false)
	if serr := p.r.writeStatus(ctx, p.nts, readFailedStatus(p.nts, err), p.st); serr != nil {
		log.FromContext(ctx).Error(serr, "writing status")
	}
	if wait, ok := cloud.RetryAfter(err); ok {
		return reconcile.Result{RequeueAfter: max(wait, time.Second)}, nil
	}
	if kit.NeedsPerson(err) {
		// Reported above; retried when the spec changes, or after the
		// resync interval doubling up to kit.MaxPersonBackoff.
		return reconcile.Result{RequeueAfter: p.st.backoff.Failed(fmt.Sprint(p.nts.Generation), p.cfg.resync)}, nil
	}
	return reconcile.Result{}, fmt.Errorf("reading the cloud: %w", err)
}

// reportReadFailures tells, once per failing scope, which parts of the cloud
// could not be read; the nodes there count as errors.
func (p *pass) reportReadFailures(failed []cloud.ScopeError) {
	for _, f := range failed {
		p.notes.Once(p.nts, "read/"+f.Scope, ReasonCloudReadFailed,
			fmt.Sprintf("reading %s failed; its nodes were not synced, the others were: %v", f.Scope, f.Err))
	}
}

// warnAboutSpec reports a valid spec that cannot do anything useful.
func (p *pass) warnAboutSpec() {
	for _, w := range p.cfg.warnings {
		p.notes.Once(p.nts, "spec-warning/"+w, ReasonSpecWarning, w)
	}
}

// syncAll groups managed nodes by the resource carrying their tags and syncs
// them in stages: every resource's plan is decided (decideAll), what the
// pass must not write is held back across all of them (hold: suspend,
// deletionPolicy Retain, a mass deletion), the cloud writes are made
// (writeAll; identical ones together on a provider that batches), and each
// plan is settled, reported and its Nodes written, in a stable order.
func (p *pass) syncAll(ctx context.Context, nodes []*cachedNode, snap cloud.Snapshot) {
	groups := map[string][]placed{}
	for _, node := range nodes {
		pl, ok := snap.Placements[node.Name]
		switch {
		case ok && pl.Err != nil:
			p.out.fail(fmt.Errorf("node %s: %w", node.Name, pl.Err))
		case !ok || !pl.Managed:
			p.out.unmanaged++
			p.reportUnmanagedPending(node, pl.Reason)
			log.FromContext(ctx).V(2).Info("node not synced", "node", node.Name, "reason", pl.Reason)
		default:
			id := cloud.CanonicalID(pl.Resource)
			p.placed[id] = append(p.placed[id], node.Name)
			if pl.Note != "" {
				p.placeNotes[node.Name] = pl.Note
			}
			if p.r.writes.inFlight(node.Name, node.ResourceVersion) {
				p.out.synced++
				p.out.inFlight++
				continue
			}
			groups[id] = append(groups[id], placed{node: node, note: pl.Note, shared: pl.Shared})
		}
	}
	ids := make([]string, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	all := p.decideAll(ids, groups, snap)
	p.hold(all)
	p.writeAll(ctx, all)
	for _, d := range all {
		d.plan.finish()
		p.report(d.plan)
		p.applyNodes(ctx, d.plan, d.tagsHash)
	}
}

// resourceWork is a resource a pass syncs: its tags as read and its Nodes
// that are not steady.
type resourceWork struct {
	res      cloud.Resource
	members  []*member
	tagsHash uint64
	// shared is true when several Nodes share the resource (a scale set).
	shared bool
}

// eachResource calls fn for each resource of ids whose Nodes are not all
// steady, in ids' order; nodes whose resource is missing from snap fail.
func (p *pass) eachResource(ids []string, groups map[string][]placed, snap cloud.Snapshot, fn func(resourceWork)) {
	for _, id := range ids {
		res, ok := snap.Resources[id]
		if !ok {
			for _, n := range groups[id] {
				p.out.fail(fmt.Errorf("node %s: its resource %s is missing from the cloud read", n.node.Name, id))
			}
			continue
		}
		tagsHash := hashTags(res)
		members := p.members(groups[id], tagsHash)
		if len(members) == 0 {
			continue // every node steady
		}
		shared := slices.ContainsFunc(groups[id], func(n placed) bool { return n.shared })
		fn(resourceWork{res: res, members: members, tagsHash: tagsHash, shared: shared})
	}
}

// placed is a managed node, its placement note and whether its resource
// is shared.
type placed struct {
	node   *cachedNode
	note   string
	shared bool
}

// members decodes the nodes of one resource for the merge, except steady
// ones, which are counted as synced. When some nodes of a resource are not
// steady, all are merged: a scale set's nodes aggregate together.
func (p *pass) members(nodes []placed, tagsHash uint64) []*member {
	steady := 0
	for _, n := range nodes {
		if n.note == "" && p.isSteady(n.node, steadyMark(n.node, tagsHash, p.nts.Generation)) {
			steady++
		}
	}
	if steady == len(nodes) {
		p.out.synced += steady
		return nil
	}
	out := make([]*member, len(nodes))
	for i, n := range nodes {
		m, err := newMember(p.cfg, n.node, n.note)
		if err != nil {
			p.notes.Once(n.node, "base/"+n.node.Name, ReasonTagUnrepresentable, err.Error())
		}
		if n.note != "" {
			p.notes.Once(n.node, "note/"+n.node.Name+"/"+n.note, ReasonFallback, n.note)
		}
		out[i] = m
	}
	return out
}

// cloudNodes converts Nodes to what the provider needs.
func cloudNodes(nodes []*cachedNode) []cloud.Node {
	out := make([]cloud.Node, len(nodes))
	for i, n := range nodes {
		out[i] = cloud.Node{Name: n.Name, ProviderID: n.Spec.ProviderID, Labels: n.Labels}
	}
	return out
}
