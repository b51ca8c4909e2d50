package build

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// Meta is an option that changes an object's metadata; it applies to every
// kind the package builds.
type Meta func(metav1.Object)

func (f Meta) applyNode(o *corev1.Node)                           { f(o) }
func (f Meta) applySecret(o *corev1.Secret)                       { f(o) }
func (f Meta) applyNodeTagSync(o *v1alpha1.NodeTagSync)           { f(o) }
func (f Meta) applyCloudMetadata(o *v1alpha1.CloudMetadata)       { f(o) }
func (f Meta) applyAzureMetadata(o *v1alpha1.AzureMetadata)       { f(o) }
func (f Meta) applyAWSMetadata(o *v1alpha1.AWSMetadata)           { f(o) }
func (f Meta) applyLabelSyncProfile(o *v1alpha1.LabelSyncProfile) { f(o) }
func (f Meta) applyCluster(o *clusterv1.Cluster)                  { f(o) }
func (f Meta) applyMachine(o *clusterv1.Machine)                  { f(o) }
func (f Meta) applyUnstructured(o *unstructured.Unstructured)     { f(o) }

// Namespace puts the object in namespace ns.
func Namespace(ns string) Meta { return func(o metav1.Object) { o.SetNamespace(ns) } }

// Labels sets the object's labels to m itself (not a copy; nil leaves the
// object without labels, as a literal with Labels: nil does).
func Labels(m map[string]string) Meta { return func(o metav1.Object) { o.SetLabels(m) } }

// Label adds the label key=value to the object's labels.
func Label(key, value string) Meta {
	return func(o metav1.Object) { o.SetLabels(with(o.GetLabels(), key, value)) }
}

// Annotations sets the object's annotations to m itself (not a copy).
func Annotations(m map[string]string) Meta { return func(o metav1.Object) { o.SetAnnotations(m) } }

// Annotation adds the annotation key=value to the object's annotations.
func Annotation(key, value string) Meta {
	return func(o metav1.Object) { o.SetAnnotations(with(o.GetAnnotations(), key, value)) }
}

// UID sets the object's UID, for objects a fake client or a unit test
// holds (the API server assigns its own).
func UID(uid types.UID) Meta { return func(o metav1.Object) { o.SetUID(uid) } }

// Generation sets the object's metadata.generation, for objects a fake
// client or a unit test holds.
func Generation(g int64) Meta { return func(o metav1.Object) { o.SetGeneration(g) } }

// ResourceVersion sets the object's resourceVersion, for objects a fake
// client or a unit test holds.
func ResourceVersion(rv string) Meta { return func(o metav1.Object) { o.SetResourceVersion(rv) } }

// OwnedBy adds a controller owner reference to owner (which must have been
// created, so that it has a UID), as Cluster API sets on the Metal3Machine
// of a Machine.
func OwnedBy(owner metav1.Object, apiVersion, kind string) Meta {
	return func(o metav1.Object) {
		o.SetOwnerReferences(append(o.GetOwnerReferences(), metav1.OwnerReference{
			APIVersion: apiVersion, Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}))
	}
}

// Object applies the metadata options to obj, named name, and returns it:
// for a kind the package has no builder for, such as a typed BareMetalHost
// (build.Object(&metal3.BareMetalHost{}, "h1", build.Labels(l))).
func Object[T metav1.Object](obj T, name string, opts ...Meta) T {
	obj.SetName(name)
	for _, o := range opts {
		o(obj)
	}
	return obj
}

// with returns m with key=value added, making m when it is nil.
func with(m map[string]string, key, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}
