package nodetags

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/controller/kit"
)

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
			if kit.HasTaint(n.Spec.Taints, PendingTaintKey) {
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
