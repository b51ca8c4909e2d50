package labelsync

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
)

// chainReader reads the management objects a host's chain goes through;
// a missing object is nil, not an error. getReader reads one object at a
// time (mapping one event); a pass uses a bulkReader.
type chainReader interface {
	metal3Machine(ctx context.Context, key types.NamespacedName) (*metav1.PartialObjectMetadata, error)
	machine(ctx context.Context, key types.NamespacedName) (*clusterv1.Machine, error)
	cluster(ctx context.Context, key types.NamespacedName) (*clusterv1.Cluster, error)
	metal3Cluster(ctx context.Context, key types.NamespacedName) (*metav1.PartialObjectMetadata, error)
}

// getReader reads each object with a Get from the cache (a copy).
type getReader struct{ c client.Reader }

func (g getReader) metal3Machine(ctx context.Context, key types.NamespacedName) (*metav1.PartialObjectMetadata, error) {
	m := metadataOf(metal3.Metal3MachineGVK)
	return orNil(m, g.c.Get(ctx, key, m))
}

func (g getReader) machine(ctx context.Context, key types.NamespacedName) (*clusterv1.Machine, error) {
	m := &clusterv1.Machine{}
	return orNil(m, g.c.Get(ctx, key, m))
}

func (g getReader) cluster(ctx context.Context, key types.NamespacedName) (*clusterv1.Cluster, error) {
	c := &clusterv1.Cluster{}
	return orNil(c, g.c.Get(ctx, key, c))
}

func (g getReader) metal3Cluster(ctx context.Context, key types.NamespacedName) (*metav1.PartialObjectMetadata, error) {
	m := metadataOf(metal3.Metal3ClusterGVK)
	return orNil(m, g.c.Get(ctx, key, m))
}

// orNil is obj after a successful read, nil when it was not found, or the
// read's error.
func orNil[T client.Object](obj T, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, client.IgnoreNotFound(err)
	}
	return obj, nil
}

// bulkReader serves a pass's reads from one List per kind and namespace of
// the cache, without copies (UnsafeDisableDeepCopy): the objects are the
// cache's own, read and never modified. A pass over 1000 hosts then costs
// three Lists instead of 3000 deep copies. One goroutine uses it.
type bulkReader struct {
	c  client.Reader
	ns map[string]*namespaceIndex
}

// namespaceIndex are one namespace's chain objects by name.
type namespaceIndex struct {
	metal3Machines map[string]*metav1.PartialObjectMetadata
	machines       map[string]*clusterv1.Machine
	clusters       map[string]*clusterv1.Cluster
	metal3Clusters map[string]*metav1.PartialObjectMetadata
}

func newBulkReader(c client.Reader) *bulkReader {
	return &bulkReader{c: c, ns: map[string]*namespaceIndex{}}
}

func (b *bulkReader) metal3Machine(ctx context.Context, key types.NamespacedName) (*metav1.PartialObjectMetadata, error) {
	return lookup(ctx, b, key, func(i *namespaceIndex) map[string]*metav1.PartialObjectMetadata { return i.metal3Machines })
}

func (b *bulkReader) machine(ctx context.Context, key types.NamespacedName) (*clusterv1.Machine, error) {
	return lookup(ctx, b, key, func(i *namespaceIndex) map[string]*clusterv1.Machine { return i.machines })
}

func (b *bulkReader) cluster(ctx context.Context, key types.NamespacedName) (*clusterv1.Cluster, error) {
	return lookup(ctx, b, key, func(i *namespaceIndex) map[string]*clusterv1.Cluster { return i.clusters })
}

func (b *bulkReader) metal3Cluster(ctx context.Context, key types.NamespacedName) (*metav1.PartialObjectMetadata, error) {
	return lookup(ctx, b, key, func(i *namespaceIndex) map[string]*metav1.PartialObjectMetadata { return i.metal3Clusters })
}

// lookup finds key in the map pick chooses of its namespace's index.
func lookup[T any](ctx context.Context, b *bulkReader, key types.NamespacedName, pick func(*namespaceIndex) map[string]T) (T, error) {
	idx, err := b.index(ctx, key.Namespace)
	if err != nil {
		var none T
		return none, err
	}
	return pick(idx)[key.Name], nil
}

// index lists a namespace's Metal3Machines, Machines, Clusters and
// Metal3Clusters, once.
func (b *bulkReader) index(ctx context.Context, ns string) (*namespaceIndex, error) {
	if idx, ok := b.ns[ns]; ok {
		return idx, nil
	}
	opts := []client.ListOption{client.InNamespace(ns), client.UnsafeDisableDeepCopy}
	var m3ms metav1.PartialObjectMetadataList
	m3ms.SetGroupVersionKind(metal3.Metal3MachineGVK.GroupVersion().WithKind(metal3.Metal3MachineGVK.Kind + "List"))
	if err := b.c.List(ctx, &m3ms, opts...); err != nil {
		return nil, fmt.Errorf("listing Metal3Machines in %s: %w", ns, err)
	}
	var machines clusterv1.MachineList
	if err := b.c.List(ctx, &machines, opts...); err != nil {
		return nil, fmt.Errorf("listing Machines in %s: %w", ns, err)
	}
	var clusters clusterv1.ClusterList
	if err := b.c.List(ctx, &clusters, opts...); err != nil {
		return nil, fmt.Errorf("listing Clusters in %s: %w", ns, err)
	}
	var m3cs metav1.PartialObjectMetadataList
	m3cs.SetGroupVersionKind(metal3.Metal3ClusterGVK.GroupVersion().WithKind(metal3.Metal3ClusterGVK.Kind + "List"))
	if err := b.c.List(ctx, &m3cs, opts...); err != nil {
		return nil, fmt.Errorf("listing Metal3Clusters in %s: %w", ns, err)
	}
	idx := &namespaceIndex{metal3Machines: byName(m3ms.Items), machines: byName(machines.Items), clusters: byName(clusters.Items),
		metal3Clusters: byName(m3cs.Items)}
	b.ns[ns] = idx
	return idx, nil
}

// byName indexes list items by name (pointers into the list).
func byName[T any, PT interface {
	*T
	GetName() string
}](items []T) map[string]PT {
	out := make(map[string]PT, len(items))
	for i := range items {
		p := PT(&items[i])
		out[p.GetName()] = p
	}
	return out
}
