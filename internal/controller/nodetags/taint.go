package nodetags

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// PendingTaintKey is the taint a node can be registered with so nothing is
// scheduled on it before its labels are synced:
// v1alpha1.NodeTagsPendingTaintKey.
const PendingTaintKey = v1alpha1.NodeTagsPendingTaintKey

// pendingIndex indexes cached Nodes that carry the pending taint.
const pendingIndex = "nodetags.pendingTaint"

// pendingIndexFunc indexes tainted Nodes under "true".
func pendingIndexFunc(obj any) ([]string, error) {
	if node, ok := obj.(*cachedNode); ok && kit.HasTaint(node.Spec.Taints, PendingTaintKey) {
		return []string{"true"}, nil
	}
	return nil, nil
}

// reportUnmanagedPending warns, once, about a selected node that keeps the
// pending taint because tagsync cannot sync it.
func (p *pass) reportUnmanagedPending(node *cachedNode, reason string) {
	if !kit.HasTaint(node.Spec.Taints, PendingTaintKey) {
		return
	}
	p.out.pending++
	p.notes.Once(node, "pending/"+node.Name, ReasonNodePending, fmt.Sprintf(
		"node keeps the taint %s:NoSchedule because tagsync cannot sync it (%s); remove the taint by hand if the node needs no synced labels",
		PendingTaintKey, reason))
}

// reportUnselectedPending warns, once, about tainted nodes that no valid
// NodeTagSync selects: nothing will ever remove their taint. The oldest
// NodeTagSync's pass does this, so each node is reported once.
func (p *pass) reportUnselectedPending(ctx context.Context, syncs []validSync) {
	nodes, err := p.r.nodes.pending(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "listing nodes with the pending taint")
		return
	}
	for _, node := range nodes {
		if selectedByAny(syncs, node) {
			continue
		}
		p.out.pending++
		p.notes.Once(node, "pending/"+node.Name, ReasonNodePending, fmt.Sprintf(
			"node keeps the taint %s:NoSchedule because no NodeTagSync selects it; select it with a NodeTagSync or remove the taint",
			PendingTaintKey))
	}
}
