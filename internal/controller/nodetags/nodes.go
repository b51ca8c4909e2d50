package nodetags

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/tags"
)

// BaseAnnotation holds, on each Node, the tags both sides last agreed on (a
// JSON object of tag name to value): the base of the three-way merge. A Node
// without it has no history, so its first sync is a union that deletes
// nothing.
const BaseAnnotation = "tagsync.io/last-synced-tags"

// readBase returns the Node's stored base, nil when there is none. A
// malformed annotation is reported and treated as no history, which can only
// add, never delete.
func readBase(node *cachedNode) (tags.Set, error) {
	raw, ok := node.Annotations[BaseAnnotation]
	if !ok {
		return nil, nil
	}
	base := tags.Set{}
	if err := json.Unmarshal([]byte(raw), &base); err != nil {
		return nil, fmt.Errorf("annotation %s on node %s is not a JSON object of strings (%v); treating the node as new", BaseAnnotation, node.Name, err)
	}
	return base, nil
}

// encodeBase renders a base for the annotation; encoding/json sorts keys, so
// equal sets give equal text and an unchanged base is never rewritten.
func encodeBase(base tags.Set) string {
	if base == nil {
		base = tags.Set{}
	}
	b, err := json.Marshal(base)
	if err != nil { // a map of strings always marshals
		panic(err)
	}
	return string(b)
}

// nodeUpdate is the change one pass makes to a Node.
type nodeUpdate struct {
	labels tags.LabelChanges
	base   string // new annotation value; "" when unchanged
	// releaseTaint removes the pending taint: taints are the Node's taints
	// without it.
	releaseTaint bool
	taints       []corev1.Taint
}

func (u nodeUpdate) isEmpty() bool { return u.labels.IsEmpty() && u.base == "" && !u.releaseTaint }

// patchNode writes only the changed labels and the base annotation (and,
// when the pending taint goes, the Node's taints without it) as a JSON merge
// patch guarded by the Node's resourceVersion: if the Node changed since it
// was read, the API server answers Conflict and the next pass re-reads it, so
// a label or taint someone else just wrote is never overwritten.
func patchNode(ctx context.Context, c client.Client, node *cachedNode, u nodeUpdate) error {
	labels := map[string]any{}
	for k, v := range u.labels.Set {
		labels[k] = v
	}
	for _, k := range u.labels.Delete {
		labels[k] = nil
	}
	meta := map[string]any{"resourceVersion": node.ResourceVersion}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if u.base != "" {
		meta["annotations"] = map[string]any{BaseAnnotation: u.base}
	}
	patch := map[string]any{"metadata": meta}
	if u.releaseTaint {
		// A merge patch replaces the list whole; the resourceVersion guard
		// makes that safe.
		patch["spec"] = map[string]any{"taints": u.taints}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	// Patch through a metadata-only object: the API server answers with the
	// Node's metadata alone, and the (shared, cached) node is never mutated.
	target := &metav1.PartialObjectMetadata{}
	target.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	target.SetName(node.Name)
	if err := c.Patch(ctx, target, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("patching node %s: %w", node.Name, err)
	}
	return nil
}
