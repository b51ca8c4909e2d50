package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/tags"
)

// NodePatch is the change one pass makes to a Node.
type NodePatch struct {
	// Labels are the label keys to set and delete; others are untouched.
	Labels tags.LabelChanges
	// Annotations are annotations to set.
	Annotations map[string]string
	// RemoveAnnotations are annotation keys to delete (sent as null; a key
	// the Node does not carry is no error).
	RemoveAnnotations []string
	// Taints, when not nil, replace the Node's taints (a merge patch
	// replaces a list whole): the pending taint released.
	Taints []corev1.Taint
	// Guard sends the resourceVersion read with every patch, not only with
	// one that replaces the taints: a Node changed since is refused
	// (Conflict) and read again, rather than patched.
	Guard bool
}

// IsEmpty reports a patch that changes nothing.
func (p NodePatch) IsEmpty() bool {
	return p.Labels.IsEmpty() && len(p.Annotations) == 0 && len(p.RemoveAnnotations) == 0 && p.Taints == nil
}

// PatchNode writes p to the Node name, read at resourceVersion rv, as a
// JSON merge patch of the changed keys only (a deleted label or annotation
// as null). It patches through a metadata-only object, so a cached Node is
// never mutated and the answer is the Node's metadata alone.
func PatchNode(ctx context.Context, c client.Client, name, rv string, p NodePatch) error {
	meta := map[string]any{}
	if !p.Labels.IsEmpty() {
		labels := map[string]any{}
		for k, v := range p.Labels.Set {
			labels[k] = v
		}
		for _, k := range p.Labels.Delete {
			labels[k] = nil
		}
		meta["labels"] = labels
	}
	if len(p.Annotations) > 0 || len(p.RemoveAnnotations) > 0 {
		annotations := map[string]any{}
		for k, v := range p.Annotations {
			annotations[k] = v
		}
		for _, k := range p.RemoveAnnotations {
			annotations[k] = nil
		}
		meta["annotations"] = annotations
	}
	patch := map[string]any{"metadata": meta}
	if p.Guard || p.Taints != nil {
		meta["resourceVersion"] = rv
	}
	if p.Taints != nil {
		patch["spec"] = map[string]any{"taints": p.Taints}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	target := &metav1.PartialObjectMetadata{}
	target.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	target.SetName(name)
	if err := c.Patch(ctx, target, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("patching node %s: %w", name, err)
	}
	return nil
}

// HasTaint reports whether taints hold the NoSchedule taint key.
func HasTaint(taints []corev1.Taint, key string) bool {
	for _, t := range taints {
		if IsTaint(t, key) {
			return true
		}
	}
	return false
}

// ReleaseTaint returns the Taints of a NodePatch that drops the NoSchedule
// taint key (an empty, not nil, list when it was the only one), or nil when
// the Node does not carry it.
func ReleaseTaint(taints []corev1.Taint, key string) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		if !IsTaint(t, key) {
			out = append(out, t)
		}
	}
	if len(out) == len(taints) {
		return nil
	}
	return out
}

// IsTaint reports whether t is the NoSchedule taint key.
func IsTaint(t corev1.Taint, key string) bool {
	return t.Key == key && t.Effect == corev1.TaintEffectNoSchedule
}

// InFlight is the record of a controller's own Node writes, per Node (K):
// the resourceVersion each write replaced and its patch. The informer
// cache shows a write a moment after it is made, and the write's own watch
// event triggers the next pass; until the cache shows a newer version, a
// pass that compared the old one would redo the write and be refused. A
// controller that recognises that watch event as its own write's (Echo)
// needs no pass for it. Both Node-writing controllers write through
// Patch. Its zero value is ready.
type InFlight[K comparable] struct {
	mu     sync.Mutex
	writes map[K]ownWrite
}

// ownWrite is one Node write: the version it replaced and its patch.
type ownWrite struct {
	from  string
	patch NodePatch
}

// Patch is the controllers' one Node write: PatchNode of p to the Node
// name, read at version rv, recorded as k's write before it is sent (its
// watch event may come before the answer) and forgotten when it fails.
func (f *InFlight[K]) Patch(ctx context.Context, c client.Client, k K, name, rv string, p NodePatch) error {
	f.Expect(k, rv, p)
	err := PatchNode(ctx, c, name, rv, p)
	if err != nil {
		f.Forget(k)
	}
	return err
}

// Expect records a write of p to k, replacing version rv, before it is
// sent.
func (f *InFlight[K]) Expect(k K, rv string, p NodePatch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writes == nil {
		f.writes = map[K]ownWrite{}
	}
	f.writes[k] = ownWrite{from: rv, patch: p}
}

// Mark records that our write replaced version rv of k.
func (f *InFlight[K]) Mark(k K, rv string) { f.Expect(k, rv, NodePatch{}) }

// Stale reports whether version rv of k is the one our write replaced;
// once the cache shows a newer version the record is dropped.
func (f *InFlight[K]) Stale(k K, rv string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.writes[k]
	if !ok {
		return false
	}
	if w.from == rv {
		return true
	}
	delete(f.writes, k)
	return false
}

// Replaced reports, as Stale does, whether version rv of k is the one our
// write replaced, but keeps the record when rv is newer: a controller that
// recognises its writes' watch events (Echo) drops it there.
func (f *InFlight[K]) Replaced(k K, rv string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.writes[k]
	return ok && w.from == rv
}

// Echo reports whether an update of k from version from is exactly our
// recorded write, and forgets the record when it is; made reports whether
// the updated Node is the old one with the write's patch applied.
func (f *InFlight[K]) Echo(k K, from string, made func(NodePatch) bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.writes[k]
	if !ok || w.from != from || !made(w.patch) {
		return false
	}
	delete(f.writes, k)
	return true
}

// Has reports whether a write of k is recorded.
func (f *InFlight[K]) Has(k K) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.writes[k]
	return ok
}

// Forget drops the record of k's write: it failed, or the Node is gone.
func (f *InFlight[K]) Forget(k K) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.writes, k)
}

// Len is how many writes are in flight.
func (f *InFlight[K]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.writes)
}

// NodeUpdate is the change one pass makes to a Node, as both Node-writing
// controllers make it: label changes, the controller's record annotation
// (the node sync's merge base, label sync's record of what it owns) and,
// when the pending taint goes, the taints without it.
type NodeUpdate struct {
	// Labels are the label changes.
	Labels tags.LabelChanges
	// Record is the record annotation's new value ("" when unchanged).
	Record string
	// Taints, when not nil, are the Node's taints without the pending
	// taint, which the update removes.
	Taints []corev1.Taint
	// Retained are the label removals the update leaves out because
	// deletionPolicy is Retain (reported, not written).
	Retained []string
}

// IsEmpty reports whether u changes nothing.
func (u NodeUpdate) IsEmpty() bool { return u.Labels.IsEmpty() && u.Record == "" && u.Taints == nil }

// Patch is u as a Node write with its record under key; guard makes it
// fail with Conflict when the Node changed since it was read.
func (u NodeUpdate) Patch(key string, guard bool) NodePatch {
	p := NodePatch{Labels: u.Labels, Taints: u.Taints, Guard: guard}
	if u.Record != "" {
		p.Annotations = map[string]string{key: u.Record}
	}
	return p
}
