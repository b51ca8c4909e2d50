package nodetags

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/controller/kit"
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
	// taints, when not nil, are the Node's taints without the pending
	// taint, which the update removes.
	taints []corev1.Taint
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
