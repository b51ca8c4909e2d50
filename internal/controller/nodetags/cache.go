package nodetags

import (
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheOptions keeps the informer cache small: the controller reads a Node's
// name, labels, annotations, resourceVersion, providerID and taints, never
// its status (images, conditions, addresses make up most of a Node), so the
// cache stores Nodes without status and no object keeps its managedFields.
// Pass it as ctrl.Options.Cache.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}: {Transform: trimNode},
		},
	}
}

// trimNode drops what the controller never reads from a cached Node.
var trimNode toolscache.TransformFunc = func(in any) (any, error) {
	node, ok := in.(*corev1.Node)
	if !ok {
		return in, nil
	}
	node.ManagedFields = nil
	node.Status = corev1.NodeStatus{}
	return node, nil
}
