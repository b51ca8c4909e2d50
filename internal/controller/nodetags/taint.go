package nodetags

import "github.com/tagsync/tagsync/internal/controller/kit"

// PendingTaintKey is the taint (effect NoSchedule, any value) a node can be
// registered with (kubelet --register-with-taints, or an AKS node pool's
// --node-taints) so nothing is scheduled on it before its labels are synced:
// the pass that first gives the node its labels removes it, in the same
// write. A node tagsync cannot sync keeps the taint and is reported.
const PendingTaintKey = "nodetags.tagsync.io/pending"

// pendingIndex indexes cached Nodes that carry the pending taint.
const pendingIndex = "nodetags.pendingTaint"

// pendingIndexFunc indexes tainted Nodes under "true".
func pendingIndexFunc(obj any) ([]string, error) {
	if node, ok := obj.(*cachedNode); ok && kit.HasTaint(node.Spec.Taints, PendingTaintKey) {
		return []string{"true"}, nil
	}
	return nil, nil
}
