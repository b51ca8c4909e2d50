package labelsync

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

// isPendingTaint reports whether t is the pending taint.
func isPendingTaint(t corev1.Taint) bool {
	return t.Key == PendingTaintKey && t.Effect == corev1.TaintEffectNoSchedule
}

// withoutPendingTaint returns the taints without the pending taint and
// whether it was there.
func withoutPendingTaint(taints []corev1.Taint) ([]corev1.Taint, bool) {
	out := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		if !isPendingTaint(t) {
			out = append(out, t)
		}
	}
	return out, len(out) != len(taints)
}

// nodeUpdate is the change one Node needs.
type nodeUpdate struct {
	labels tags.LabelChanges
	// releaseTaint: drop the pending taint, leaving taints.
	releaseTaint bool
	taints       []corev1.Taint
}

// updateFor is the change that brings a Node in line with its host.
func updateFor(host, node map[string]string, prefixes []string, taints []corev1.Taint) nodeUpdate {
	u := nodeUpdate{labels: tags.SyncLabels(host, node, prefixes)}
	u.taints, u.releaseTaint = withoutPendingTaint(taints)
	return u
}

// isEmpty reports an update that changes nothing.
func (u nodeUpdate) isEmpty() bool { return u.labels.IsEmpty() && !u.releaseTaint }

// patchNode sends a JSON merge patch of the changed label keys only (a
// removed key as null) and, when the pending taint goes, the taint list
// without it, guarded by the resourceVersion read (a merge patch replaces
// a list whole). It patches through a metadata-only object, so the cached
// Node is never mutated.
func patchNode(ctx context.Context, c client.Client, node *corev1.Node, u nodeUpdate) error {
	meta := map[string]any{}
	if !u.labels.IsEmpty() {
		labels := map[string]any{}
		for k, v := range u.labels.Set {
			labels[k] = v
		}
		for _, k := range u.labels.Delete {
			labels[k] = nil
		}
		meta["labels"] = labels
	}
	patch := map[string]any{}
	if u.releaseTaint {
		meta["resourceVersion"] = node.ResourceVersion
		taints := u.taints
		if taints == nil {
			taints = []corev1.Taint{}
		}
		patch["spec"] = map[string]any{"taints": taints}
	}
	patch["metadata"] = meta
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	target := &metav1.PartialObjectMetadata{}
	target.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	target.SetName(node.Name)
	if err := c.Patch(ctx, target, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("patching node %s: %w", node.Name, err)
	}
	return nil
}

// markInFlight remembers that a Node was written from the version read.
func (r *Reconciler) markInFlight(k nodeKey, readAt string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight[k] = readAt
}

// stale reports a Node whose cached copy is still the one a write of ours
// replaced: comparing it would redo that write. Once the cache shows a newer
// version the record is dropped.
func (r *Reconciler) stale(k nodeKey, node *corev1.Node) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.inFlight[k]
	if !ok {
		return false
	}
	if v == node.ResourceVersion {
		return true
	}
	delete(r.inFlight, k)
	return false
}

// forgetNode drops a deleted Node's record.
func (r *Reconciler) forgetNode(k nodeKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.inFlight, k)
}
