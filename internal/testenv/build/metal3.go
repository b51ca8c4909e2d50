package build

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/tagsync/tagsync/api/metal3"
)

// The Metal3 kinds label sync follows, as api/metal3 declares them (the
// builders make unstructured objects of them: Metal3's Go modules are no
// dependency of tagsync).
var (
	// BareMetalHostGVK is the Metal3 BareMetalHost kind.
	BareMetalHostGVK = metal3.HostGVK
	// Metal3MachineGVK is CAPM3's Metal3Machine kind.
	Metal3MachineGVK = metal3.Metal3MachineGVK
	// Metal3ClusterGVK is CAPM3's Metal3Cluster kind.
	Metal3ClusterGVK = metal3.Metal3ClusterGVK
)

// hostAnnotation on a Metal3Machine names its BareMetalHost as
// <namespace>/<name> (CAPM3's annotation).
const hostAnnotation = metal3.HostAnnotation

// SecretOption changes a Secret being built: a Meta option or a
// SecretFunc.
type SecretOption interface{ applySecret(*corev1.Secret) }

// SecretFunc is any edit of a Secret as an option.
type SecretFunc func(*corev1.Secret)

func (f SecretFunc) applySecret(o *corev1.Secret) { f(o) }

// KubeconfigSecret is Cluster API's Secret holding the kubeconfig of the
// workload cluster cluster: named <cluster>-kubeconfig, labelled with the
// cluster's name, the kubeconfig under the key "value".
func KubeconfigSecret(cluster string, kubeconfig []byte, opts ...SecretOption) *corev1.Secret {
	o := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-kubeconfig",
		Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}},
		Data: map[string][]byte{"value": kubeconfig}}
	for _, opt := range opts {
		opt.applySecret(o)
	}
	return o
}

// ClusterOption changes a Cluster API Cluster being built: a Meta option,
// InfrastructureRef or a ClusterFunc.
type ClusterOption interface{ applyCluster(*clusterv1.Cluster) }

// ClusterFunc is any edit of a Cluster as an option.
type ClusterFunc func(*clusterv1.Cluster)

func (f ClusterFunc) applyCluster(o *clusterv1.Cluster) { f(o) }

// Cluster is a Cluster API Cluster named name with opts applied.
func Cluster(name string, opts ...ClusterOption) *clusterv1.Cluster {
	o := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, opt := range opts {
		opt.applyCluster(o)
	}
	return o
}

// MachineOption changes a Cluster API Machine being built: a Meta option,
// InfrastructureRef or a MachineFunc.
type MachineOption interface{ applyMachine(*clusterv1.Machine) }

// MachineFunc is any edit of a Machine as an option.
type MachineFunc func(*clusterv1.Machine)

func (f MachineFunc) applyMachine(o *clusterv1.Machine) { f(o) }

// Machine is a Cluster API Machine named name of the cluster cluster
// (labelled with its name), bootstrapped from the Secret "bootstrap" (the
// API server requires a bootstrap), with opts applied.
func Machine(name, cluster string, opts ...MachineOption) *clusterv1.Machine {
	o := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}},
		Spec: clusterv1.MachineSpec{ClusterName: cluster, Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("bootstrap")}}}
	for _, opt := range opts {
		opt.applyMachine(o)
	}
	return o
}

// InfraRefOption is an infrastructure reference as an option: see
// InfrastructureRef.
type InfraRefOption clusterv1.ContractVersionedObjectReference

// InfrastructureRef sets the infrastructure object of a Cluster or
// Machine: the object name of kind gvk (e.g. Metal3ClusterGVK).
func InfrastructureRef(gvk schema.GroupVersionKind, name string) InfraRefOption {
	return InfraRefOption{APIGroup: gvk.Group, Kind: gvk.Kind, Name: name}
}

func (r InfraRefOption) applyCluster(o *clusterv1.Cluster) {
	o.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference(r)
}

func (r InfraRefOption) applyMachine(o *clusterv1.Machine) {
	o.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference(r)
}

// UnstructuredOption changes an unstructured object being built (the Metal3
// kinds): a Meta option or an UnstructuredFunc.
type UnstructuredOption interface {
	applyUnstructured(*unstructured.Unstructured)
}

// UnstructuredFunc is any edit of an unstructured object as an option.
type UnstructuredFunc func(*unstructured.Unstructured)

func (f UnstructuredFunc) applyUnstructured(o *unstructured.Unstructured) { f(o) }

// Unstructured is an object of kind gvk named name, with opts applied.
func Unstructured(gvk schema.GroupVersionKind, name string, opts ...UnstructuredOption) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(gvk)
	o.SetName(name)
	for _, opt := range opts {
		opt.applyUnstructured(o)
	}
	return o
}

// Metal3Cluster is a Metal3Cluster named name with opts applied.
func Metal3Cluster(name string, opts ...UnstructuredOption) *unstructured.Unstructured {
	return Unstructured(Metal3ClusterGVK, name, opts...)
}

// Metal3Machine is a Metal3Machine named name with opts applied; HostOf
// names its host, OwnedBy its Machine.
func Metal3Machine(name string, opts ...UnstructuredOption) *unstructured.Unstructured {
	return Unstructured(Metal3MachineGVK, name, opts...)
}

// HostOf names a Metal3Machine's BareMetalHost, <namespace>/<name>, in
// CAPM3's annotation.
func HostOf(namespace, name string) Meta { return Annotation(hostAnnotation, namespace+"/"+name) }

// MachineOwner makes a Metal3Machine (or any object) owned by the Machine m,
// as Cluster API does; m must have been created.
func MachineOwner(m *clusterv1.Machine) Meta {
	return OwnedBy(m, clusterv1.GroupVersion.String(), "Machine")
}

// BareMetalHost is a BareMetalHost named name with opts applied.
func BareMetalHost(name string, opts ...UnstructuredOption) *unstructured.Unstructured {
	return Unstructured(BareMetalHostGVK, name, opts...)
}

// Consumer sets a BareMetalHost's spec.consumerRef to the Metal3Machine
// namespace/name.
func Consumer(namespace, name string) UnstructuredFunc {
	return func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedMap(o.Object, map[string]any{
			"apiVersion": Metal3MachineGVK.GroupVersion().String(), "kind": Metal3MachineGVK.Kind,
			"name": name, "namespace": namespace}, "spec", "consumerRef")
	}
}

// ConsumerRef is the reference of a host to its Metal3Machine
// namespace/name, for typed hosts (spec.consumerRef).
func ConsumerRef(namespace, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: Metal3MachineGVK.GroupVersion().String(), Kind: Metal3MachineGVK.Kind, Name: name, Namespace: namespace}
}

// InfrastructureGVK is OpenShift's Infrastructure kind (config.openshift.io),
// whose one object, named cluster, the OpenShift adapter reads.
var InfrastructureGVK = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Infrastructure"}

// Infrastructure is OpenShift's Infrastructure named cluster with opts
// applied (Field(spec, "spec") for its spec; its status is written through
// the status subresource after it is created).
func Infrastructure(opts ...UnstructuredOption) *unstructured.Unstructured {
	return Unstructured(InfrastructureGVK, "cluster", opts...)
}

// Field sets the field at path of an unstructured object to value itself
// (not a copy), making the maps on the way.
func Field(value any, path ...string) UnstructuredFunc {
	return func(o *unstructured.Unstructured) {
		if o.Object == nil {
			o.Object = map[string]any{}
		}
		m := o.Object
		for _, k := range path[:len(path)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[path[len(path)-1]] = value
	}
}
