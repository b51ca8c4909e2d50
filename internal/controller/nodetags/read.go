package nodetags

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// The read stage: the Nodes a pass syncs (from the informer's store, less
// those an older NodeTagSync claims) and one bulk cloud read of their
// resources.

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

// readCloud is a full pass's bulk cloud read of the nodes' resources:
// fresh when the resync interval has passed, a sync request was made or
// cloud changes wait for it; else the provider may serve it from its
// cache.
func (p *pass) readCloud(ctx context.Context, nodes []*cachedNode) (cloud.Snapshot, bool, error) {
	fresh := p.r.freshRead(p.nts, p.st, p.cfg.resync) || p.changesPending
	snap, err := p.cfg.provider.Snapshot(ctx, cloudNodes(nodes), cloud.ReadOptions{
		Target: p.cfg.target, Fresh: fresh, Scopes: p.cfg.resourceGroups,
	})
	if err != nil {
		return cloud.Snapshot{}, fresh, err
	}
	if fresh {
		// Failed scopes are not cached by the provider, so the next pass
		// reads them again anyway; the healthy ones may come from its cache.
		p.r.markRead(p.nts, p.st, p.start)
		for _, r := range snap.Resources {
			p.r.subscriber.Saw(p.cfg.provider.Name(), r.ID, r.Tags, p.start) // a change no event announced: events are silent
		}
	}
	return snap, fresh, nil
}

// cloudNodes converts Nodes to what the provider needs.
func cloudNodes(nodes []*cachedNode) []cloud.Node {
	out := make([]cloud.Node, len(nodes))
	for i, n := range nodes {
		out[i] = cloud.Node{Name: n.Name, ProviderID: n.Spec.ProviderID, Labels: n.Labels, Created: n.CreationTimestamp.Time}
	}
	return out
}

// validSync is a NodeTagSync whose spec is usable, with its node selector.
type validSync struct {
	nts      *v1alpha1.NodeTagSync
	selector labels.Selector
}

// validSyncs lists the valid NodeTagSyncs not being deleted, oldest first
// (ties broken by name). An invalid NodeTagSync syncs nothing, so it claims
// no node.
func (r *Reconciler) validSyncs(ctx context.Context) ([]validSync, error) {
	var list v1alpha1.NodeTagSyncList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing NodeTagSyncs: %w", err)
	}
	return validSyncsOf(list.Items, r.providers), nil
}

// validSyncsOf returns the valid NodeTagSyncs of items not being deleted,
// oldest first (ties broken by name); it sorts items.
func validSyncsOf(items []v1alpha1.NodeTagSync, providers cloud.Providers) []validSync {
	sort.Slice(items, func(i, j int) bool { return olderThan(&items[i], &items[j]) })
	var out []validSync
	for i := range items {
		nts := &items[i]
		if nts.DeletionTimestamp != nil {
			continue
		}
		if cfg, err := configFor(nts, providers); err == nil {
			out = append(out, validSync{nts: nts, selector: cfg.selector})
		}
	}
	return out
}

// olderClaimants are the valid NodeTagSyncs created before nts. A node
// selected by several NodeTagSyncs is synced only by the oldest, so two
// configurations never fight over one node's labels.
func olderClaimants(syncs []validSync, nts *v1alpha1.NodeTagSync) []validSync {
	var out []validSync
	for _, s := range syncs {
		if s.nts.UID != nts.UID && olderThan(s.nts, nts) {
			out = append(out, s)
		}
	}
	return out
}

func olderThan(a, b *v1alpha1.NodeTagSync) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// selectedByAny reports whether some NodeTagSync in syncs selects node.
func selectedByAny(syncs []validSync, node *cachedNode) bool {
	for _, s := range syncs {
		if s.selector.Matches(nodeLabels{node}) {
			return true
		}
	}
	return false
}

// withoutClaimed drops nodes an older NodeTagSync syncs and returns how many.
func withoutClaimed(nodes []*cachedNode, claimants []validSync) ([]*cachedNode, int) {
	if len(claimants) == 0 {
		return nodes, 0
	}
	kept := nodes[:0:0]
	for _, n := range nodes {
		if !selectedByAny(claimants, n) {
			kept = append(kept, n)
		}
	}
	return kept, len(nodes) - len(kept)
}

// nodeSource lists the cached Nodes a pass reads. The pass never modifies
// them, so it reads the cache's own objects: from the informer's store as
// shared pointers (no copy of 10,000 Node structs per pass), or through the
// client when there is no store (a client without a cache).
type nodeSource struct {
	client ctrl.Client
	store  toolscache.Indexer
}

// list returns the Nodes the selector matches.
func (s nodeSource) list(ctx context.Context, sel labels.Selector) ([]*cachedNode, error) {
	if s.store == nil {
		var list corev1.NodeList
		if err := s.client.List(ctx, &list, ctrl.MatchingLabelsSelector{Selector: sel}, ctrl.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		return pointers(list.Items), nil
	}
	var out []*cachedNode
	for _, obj := range s.store.List() {
		if n, ok := obj.(*cachedNode); ok && sel.Matches(nodeLabels{n}) {
			out = append(out, n)
		}
	}
	return out, nil
}

// pending returns the Nodes carrying the pending taint.
func (s nodeSource) pending(ctx context.Context) ([]*cachedNode, error) {
	if s.store == nil {
		all, err := s.list(ctx, labels.Everything())
		var out []*cachedNode
		for _, n := range all {
			if kit.HasTaint(n.Spec.Taints, v1alpha1.NodeTagsPendingTaintKey) {
				out = append(out, n)
			}
		}
		return out, err
	}
	objs, err := s.store.ByIndex(pendingIndex, "true")
	if err != nil {
		return nil, fmt.Errorf("the pending-taint index: %w", err)
	}
	out := make([]*cachedNode, 0, len(objs))
	for _, obj := range objs {
		if n, ok := obj.(*cachedNode); ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// pointers returns the cached form of nodes.
func pointers(nodes []corev1.Node) []*cachedNode {
	out := make([]*cachedNode, len(nodes))
	for i := range nodes {
		out[i] = trim(&nodes[i])
	}
	return out
}

// nodeSourceFor finds the informer store of the manager's Node cache and
// indexes it by the pending taint; without one it reads through the client.
func nodeSourceFor(ctx context.Context, mgr ctrlManager, c ctrl.Client) (nodeSource, error) {
	src := nodeSource{client: c}
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return src, fmt.Errorf("the Node informer: %w", err)
	}
	withIndexer, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return src, nil
	}
	if err := inf.AddIndexers(toolscache.Indexers{pendingIndex: pendingIndexFunc}); err != nil {
		return src, fmt.Errorf("indexing nodes by the pending taint: %w", err)
	}
	src.store = withIndexer.GetIndexer()
	return src, nil
}

// Cloud changes (the events Hub) turn into targeted passes: the controller
// keeps an index from each resource to the NodeTagSyncs whose last full
// pass placed nodes on it; a change of an indexed resource remembers the
// resource for those NodeTagSyncs and enqueues them; their next pass reads
// only the changed resources (cloud.ReadOptions.Resources) and syncs only
// the nodes placed on them. A change that carries the resource's tags
// (AWS) spares the read (carried.go). Changes queued before the pass starts are
// coalesced into it. A change of a resource no NodeTagSync placed nodes on
// does nothing.
//
// A pass is full, not targeted, whenever anything but a change may have
// triggered it: the spec or a sync request changed, the resync interval
// passed, a Node changed since the last full pass, the hub overflowed, or
// the last full pass failed. A full pass with changes pending reads the
// cloud fresh.

// changeEvents is what the Reconciler needs to take cloud changes: the
// hub subscription (kit.Subscriber) and the change book.
type changeEvents struct {
	subscriber kit.Subscriber
	changes    *changeBook
}

// UseEvents makes the controller take hub's changes (kit.Subscriber.UseEvents).
func (e *changeEvents) UseEvents(hub *cloudchange.Hub) { e.subscriber.UseEvents(hub) }

// changeBook is the controller's change index (kit.ChangeIndex: the
// NodeTagSyncs placed on each resource, the changes pending per
// NodeTagSync, flagged when its next full pass must read the cloud fresh
// because changes were dropped, and those that arrive before its index
// exists) and what the node sync adds to it: the nodes each resource
// holds. It is safe for concurrent use.
type changeBook struct {
	index kit.ChangeIndex[string]

	mu sync.Mutex
	// placed are, per NodeTagSync, its last full pass's nodes per resource;
	// notes its placements' notes, per node that has one.
	placed map[string]map[string][]string
	notes  map[string]map[string]string
	// readAt is, per resource, when a pass last read or wrote it.
	readAt map[string]time.Time
	// epoch counts the events after which every NodeTagSync needs a full
	// pass (Node events, overflows).
	epoch uint64
}

func newChangeBook() *changeBook {
	return &changeBook{index: kit.ChangeIndex[string]{Name: func(name string) string { return name }},
		placed: map[string]map[string][]string{}, notes: map[string]map[string]string{}, readAt: map[string]time.Time{}}
}

// ownerKey is the index key of a changed resource: its canonical ID, a
// Uniform scale set's instance mapped to its scale set.
func ownerKey(resource string) string {
	id := cloud.CanonicalID(resource)
	if i := strings.Index(id, "/virtualmachinescalesets/"); i >= 0 {
		if j := strings.Index(id[i:], "/virtualmachines/"); j >= 0 {
			return id[:i+j]
		}
	}
	return id
}

// route remembers a change for the NodeTagSyncs placed on its resource,
// except the one whose own write made it (Change.EchoOf), and returns
// their names. The tags a change carries are kept only when they are the
// indexed resource's own (not a scale set instance's).
func (b *changeBook) route(c cloudchange.Change) []string {
	id := ownerKey(c.Resource)
	if id != cloud.CanonicalID(c.Resource) {
		c.Tags = nil
	}
	names, found := b.index.Route(id, c)
	if !found && c.Kind == cloudchange.KindWrite {
		b.index.Warm.Hold(c) // no NodeTagSync is placed there yet: maybe its index warms
	}
	slices.Sort(names)
	return names
}

// expect records that a pass of name began: until one of its full passes
// records its placements, changes no index places are kept for it.
func (b *changeBook) expect(name string) { b.index.Warm.Begin(name) }

// nodeChanged makes every NodeTagSync's next pass full: a Node changed.
func (b *changeBook) nodeChanged() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.epoch++
}

// overflow makes every NodeTagSync's next pass full and fresh: changes
// were dropped. It returns the names of those indexed.
func (b *changeBook) overflow() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.epoch++
	var names []string
	for name := range b.placed {
		b.index.Pending.Flag(name)
		names = append(names, name)
	}
	return names
}

// currentEpoch is the epoch a full pass starting now serves.
func (b *changeBook) currentEpoch() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.epoch
}

// take returns and forgets the resources changed for name, what their
// latest changes carried, and whether its next full pass must read fresh.
func (b *changeBook) take(name string) ([]string, map[string]kit.Carried, bool) {
	return b.index.Pending.TakeCarried(name)
}

// restore puts back the changes of a failed pass for its retry; fresh
// makes that retry read fresh.
func (b *changeBook) restore(name string, ids []string, fresh bool) {
	b.index.Pending.Restore(name, ids, fresh)
}

// record replaces name's placements in the index with a full pass's, which
// read the cloud at, or earlier (its reads may come from the provider's
// cache): a readAt later than the read only makes a carried change be read
// again, never taken for newer than it is. The changes that arrived before
// the index existed (early) of resources name is now placed on become
// name's; it reports whether there were any (name's next pass serves them).
func (b *changeBook) record(name string, placed map[string][]string, notes map[string]string, at time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unindex(name)
	b.placed[name], b.notes[name] = placed, notes
	for id := range placed {
		b.readLocked(id, at)
		b.index.Add(name, id)
	}
	replayed := false
	b.index.Replay(name, func(c cloudchange.Change) {
		if id := ownerKey(c.Resource); placed[id] != nil && c.EchoOf != name {
			b.index.Pending.AddChange(name, id, c)
			replayed = true
		}
		b.index.Warm.Hold(c) // kept while another NodeTagSync's index does not exist yet
	})
	return replayed
}

// forget drops a deleted NodeTagSync.
func (b *changeBook) forget(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unindex(name)
	b.index.Forget(name)
}

// unindex removes name from the index (the caller holds b.mu).
func (b *changeBook) unindex(name string) {
	for id := range b.placed[name] {
		b.index.Remove(name, id)
		if !b.index.Found(id) {
			delete(b.readAt, id)
		}
	}
	delete(b.placed, name)
	delete(b.notes, name)
}

// nodesOn returns the names of the nodes name's last full pass placed on
// the resources ids.
func (b *changeBook) nodesOn(name string, ids []string) map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]bool{}
	for _, id := range ids {
		for _, n := range b.placed[name][id] {
			out[n] = true
		}
	}
	return out
}

// Route implements cloudchange.Router: a change enqueues the NodeTagSyncs placed
// on its resource; a change of its run state alone (its tags did not
// change) does nothing.
func (r *Reconciler) Route(c cloudchange.Change) []string {
	if c.Kind == cloudchange.KindState {
		return nil
	}
	names := r.changes.route(c)
	r.subscriber.Enqueue(requests(names)...)
	return names
}

// Overflow implements cloudchange.Router: changes were dropped, so every
// NodeTagSync runs one full pass.
func (r *Reconciler) Overflow() {
	r.subscriber.Enqueue(requests(r.changes.overflow())...)
}

// requests are the reconcile requests of NodeTagSyncs by name.
func requests(names []string) []reconcile.Request {
	out := make([]reconcile.Request, len(names))
	for i, n := range names {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: n}}
	}
	return out
}
