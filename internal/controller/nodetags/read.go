package nodetags

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
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
