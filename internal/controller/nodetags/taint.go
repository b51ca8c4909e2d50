package nodetags

import (
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// pendingIndex indexes cached Nodes that carry the pending taint.
const pendingIndex = "nodetags.pendingTaint"

// pendingIndexFunc indexes tainted Nodes under "true".
func pendingIndexFunc(obj any) ([]string, error) {
	if node, ok := obj.(*cachedNode); ok && kit.HasTaint(node.Spec.Taints, v1alpha1.NodeTagsPendingTaintKey) {
		return []string{"true"}, nil
	}
	return nil, nil
}
