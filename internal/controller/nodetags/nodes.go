package nodetags

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// BaseAnnotation holds, on each Node, the merge base of the three-way
// merge (tags.Base): v1alpha1.LastSyncedTagsAnnotation.
const BaseAnnotation = v1alpha1.LastSyncedTagsAnnotation

// readBase returns the Node's stored base; ok is false when there is none.
// A malformed annotation is reported and treated as no history, which can
// only add, never delete.
func readBase(node *cachedNode) (base tags.Base, ok bool, err error) {
	raw, found := node.Annotations[BaseAnnotation]
	if !found {
		return tags.Base{}, false, nil
	}
	base, err = tags.ParseBase(raw)
	if err != nil {
		return tags.Base{}, false, fmt.Errorf("annotation %s on node %s: %v; treating the node as new", BaseAnnotation, node.Name, err)
	}
	return base, true, nil
}

// nodeUpdate is the change one pass makes to a Node.
type nodeUpdate struct {
	labels tags.LabelChanges
	base   string // new annotation value; "" when unchanged
	// taints, when not nil, are the Node's taints without the pending
	// taint, which the update removes.
	taints []corev1.Taint
	// retained are the tags whose labels deletionPolicy Retain kept (not
	// written: reported).
	retained []string
}

func (u nodeUpdate) isEmpty() bool { return u.labels.IsEmpty() && u.base == "" && u.taints == nil }

// patchNode writes only the changed labels and the base annotation (and,
// when the pending taint goes, the Node's taints without it), guarded by the
// Node's resourceVersion: if the Node changed since it was read, the API
// server answers Conflict and the next pass re-reads it, so a label or taint
// someone else just wrote is never overwritten.
func patchNode(ctx context.Context, c client.Client, node *cachedNode, u nodeUpdate) error {
	p := kit.NodePatch{Labels: u.labels, Taints: u.taints, Guard: true}
	if u.base != "" {
		p.Annotations = map[string]string{BaseAnnotation: u.base}
	}
	return kit.PatchNode(ctx, c, node.Name, node.ResourceVersion, p)
}
