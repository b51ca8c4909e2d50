package nodetags

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// TrimNode is the cache transform the controller works with: it reads a
// Node's name, labels, base annotation, resourceVersion, providerID and
// taints, never its status (images, conditions, addresses make up most of a
// Node) or other annotations, so the cache can store Nodes without them. It
// also interns label strings and the base: the Nodes of a cluster share nearly
// all label keys and most values (pool, zone, OS, synced tags), so thousands
// of Nodes hold one copy of each instead of one per Node.
var TrimNode toolscache.TransformFunc = func(in any) (any, error) {
	node, ok := in.(*corev1.Node)
	if !ok {
		return in, nil
	}
	node.ManagedFields = nil
	node.Status = corev1.NodeStatus{}
	node.Spec.PodCIDR, node.Spec.PodCIDRs = "", nil
	node.Labels = internMap(node.Labels)
	node.Annotations = onlyBase(node.Annotations)
	return node, nil
}

// onlyBase keeps, of a Node's annotations, only the one the controller
// reads (the stored base).
func onlyBase(annotations map[string]string) map[string]string {
	base, ok := annotations[BaseAnnotation]
	if !ok {
		return nil
	}
	return map[string]string{BaseAnnotation: intern(base)}
}

// internMap returns m with canonical copies of its keys and values.
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
