package nodetags

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// TrimNode is the cache transform the controller works with: it reads a
// Node's name, labels, base annotation, resourceVersion, providerID and
// taints, never its status (images, conditions, addresses make up most of a
// Node) or other annotations, so the cache stores each Node as a cachedNode:
// its metadata and spec, without the status struct (half of a corev1.Node
// even when empty).
//
// It also shares what Nodes have in common. The Nodes of a pool carry the
// same labels (pool, zone, OS, instance type, synced tags) except
// kubernetes.io/hostname, which is the Node's name. So the cached label map
// holds a marker in place of a hostname equal to the name (selectors see the
// hostname again through nodeLabels), and equal label maps — and equal base
// annotations — are stored once for all the Nodes that have them (see
// mapTable). 10,000 Nodes in 100 pools then hold a few hundred label maps
// instead of 10,000. Cached maps are read-only: nothing in the controller
// writes to a cached Node.
//
// The transform is idempotent (client-go may hand it an object it already
// transformed) and never mutates a map it has shared.
var TrimNode toolscache.TransformFunc = func(in any) (any, error) {
	if node, ok := in.(*corev1.Node); ok {
		return trim(node), nil
	}
	return in, nil
}

// trim returns what the controller keeps of node.
func trim(node *corev1.Node) *cachedNode {
	out := &cachedNode{TypeMeta: nodeTypeMeta, ObjectMeta: node.ObjectMeta, Spec: node.Spec}
	out.ManagedFields = nil
	out.Spec.PodCIDR, out.Spec.PodCIDRs = "", nil
	out.Labels = sharedLabels.intern(withHostnameMarker(node.Name, node.Labels))
	out.Annotations = sharedAnnotations.intern(onlyBase(node.Annotations))
	return out
}

// cachedNode is a Node as the controller's cache keeps it: metadata (labels
// shared, annotations only the base) and spec (providerID, taints), no
// status. It is a client.Object whose kind is Node, so events about it are
// recorded on the Node.
type cachedNode struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Spec corev1.NodeSpec
}

// nodeTypeMeta names the kind of every cachedNode.
var nodeTypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}

// DeepCopyObject implements runtime.Object. Labels and annotations are
// copied too, so the copy owns its maps.
func (n *cachedNode) DeepCopyObject() runtime.Object {
	out := &cachedNode{TypeMeta: n.TypeMeta, Spec: *n.Spec.DeepCopy()}
	n.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// hostnameIsNodeName stands in a cached label map for kubernetes.io/hostname
// when that label's value is the Node's name. It is not a valid label key,
// so no selector and no NodeTagSync labelPrefix can name it, and it lies
// under kubernetes.io/, where no synced label can be.
const hostnameIsNodeName = corev1.LabelHostname + "=<node name>"

// withHostnameMarker returns labels with kubernetes.io/hostname replaced by
// the hostnameIsNodeName marker when its value is name; otherwise labels
// itself. It copies rather than edits labels.
func withHostnameMarker(name string, labels map[string]string) map[string]string {
	if v, ok := labels[corev1.LabelHostname]; !ok || v != name {
		return labels
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if k != corev1.LabelHostname {
			out[k] = v
		}
	}
	out[hostnameIsNodeName] = ""
	return out
}

// nodeLabels is the label set of a cached Node as selectors see it: its
// labels, with kubernetes.io/hostname restored where TrimNode replaced it by
// the marker. It implements labels.Labels.
type nodeLabels struct{ node *cachedNode }

// Has reports whether the Node has the label.
func (l nodeLabels) Has(key string) bool {
	_, ok := l.Lookup(key)
	return ok
}

// Get returns the label's value ("" when the Node lacks it).
func (l nodeLabels) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

// Lookup returns the label's value and whether the Node has it.
func (l nodeLabels) Lookup(key string) (string, bool) {
	if key == corev1.LabelHostname {
		if _, marked := l.node.Labels[hostnameIsNodeName]; marked {
			return l.node.Name, true
		}
	}
	if key == hostnameIsNodeName {
		return "", false
	}
	v, ok := l.node.Labels[key]
	return v, ok
}

// onlyBase keeps, of a Node's annotations, only the one the controller
// reads (the stored base). It copies rather than edits annotations.
func onlyBase(annotations map[string]string) map[string]string {
	base, ok := annotations[v1alpha1.LastSyncedTagsAnnotation]
	if !ok {
		return nil
	}
	if len(annotations) == 1 {
		return annotations
	}
	return map[string]string{v1alpha1.LastSyncedTagsAnnotation: base}
}

// internMap returns a copy of m with canonical copies of its keys and values.
func internMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}

// intern returns the canonical copy of s (kept while anything uses it).
func intern(s string) string { return unique.Make(s).Value() }
