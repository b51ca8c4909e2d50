package nodetags

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheOptions keeps the informer cache small: the controller reads a Node's
// name, labels, base annotation, resourceVersion, providerID and taints,
// never its status (images, conditions, addresses make up most of a Node) or
// other annotations, so the cache stores Nodes without them and no object
// keeps its managedFields.
// Pass it as ctrl.Options.Cache.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}: {Transform: trimNode},
		},
	}
}

// trimNode drops what the controller never reads from a cached Node, and
// interns label strings and the base: the Nodes of a cluster share nearly
// all label keys and most values (pool, zone, OS, synced tags), so thousands
// of Nodes hold one copy of each instead of one per Node.
var trimNode toolscache.TransformFunc = func(in any) (any, error) {
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
