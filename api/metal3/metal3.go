// Package metal3 declares the part of the Metal3 API (metal3.io and CAPM3's
// infrastructure.cluster.x-k8s.io kinds) tagsync reads: the kinds' group,
// version and kind, the annotations label sync reads on them, and the
// fields of a BareMetalHost it decodes.
//
// It declares no CRD of tagsync's: controller-gen skips it.
//
// +kubebuilder:skip
package metal3

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Metal3's Go modules are not a dependency: the few fields read are
// declared here (BareMetalHost), or only the metadata is read
// (Metal3Machine, Metal3Cluster). Their API reference:
// https://github.com/metal3-io/baremetal-operator/blob/main/docs/api.md and
// https://github.com/metal3-io/cluster-api-provider-metal3/blob/main/docs/api.md.
var (
	// HostGVK is the Metal3 BareMetalHost kind.
	HostGVK = schema.GroupVersionKind{Group: "metal3.io", Version: "v1alpha1", Kind: "BareMetalHost"}
	// Metal3MachineGVK is CAPM3's Metal3Machine kind.
	Metal3MachineGVK = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "Metal3Machine"}
	// Metal3ClusterGVK is CAPM3's Metal3Cluster kind.
	Metal3ClusterGVK = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "Metal3Cluster"}
)

// Annotations read on Metal3 objects.
const (
	// HostPausedAnnotation on a BareMetalHost (any value) pauses it: its
	// Node is not synced.
	HostPausedAnnotation = "baremetalhost.metal3.io/paused"
	// HostAnnotation on a Metal3Machine names its BareMetalHost as
	// <namespace>/<name>.
	HostAnnotation = "metal3.io/BareMetalHost"
	// PrefixesAnnotation on a Metal3Cluster lists the label prefixes its
	// hosts own, comma-separated (CAPM3's label sync setting).
	PrefixesAnnotation = "metal3.io/metal3-label-sync-prefixes"
	// IntervalAnnotation on a Metal3Cluster is the resync interval of its
	// hosts (a duration, 10s to 24h; default 60s).
	IntervalAnnotation = "metal3.io/metal3-label-sync-interval"
)

// BareMetalHost is the part of a Metal3 BareMetalHost (metal3.io/v1alpha1)
// label sync reads: its labels, annotations and consumer. Decoding into it
// drops everything else, which keeps the cache small.
type BareMetalHost struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec holds the consumer reference.
	Spec BareMetalHostSpec `json:"spec,omitempty"`
}

// BareMetalHostSpec is the part of a BareMetalHost's spec label sync reads.
type BareMetalHostSpec struct {
	// ConsumerRef names the object that uses the host: a Metal3Machine when
	// Cluster API provisioned it.
	ConsumerRef *corev1.ObjectReference `json:"consumerRef,omitempty"`
}

// BareMetalHostList is a list of BareMetalHost.
type BareMetalHostList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the hosts.
	Items []BareMetalHost `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (h *BareMetalHost) DeepCopyObject() runtime.Object { return h.DeepCopy() }

// DeepCopy returns a deep copy of h.
func (h *BareMetalHost) DeepCopy() *BareMetalHost {
	if h == nil {
		return nil
	}
	out := &BareMetalHost{TypeMeta: h.TypeMeta}
	h.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if h.Spec.ConsumerRef != nil {
		ref := *h.Spec.ConsumerRef
		out.Spec.ConsumerRef = &ref
	}
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *BareMetalHostList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &BareMetalHostList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]BareMetalHost, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].DeepCopy()
		}
	}
	return out
}

// AddToScheme registers BareMetalHost with s (the manager's scheme, so its
// cache and client can read hosts).
func AddToScheme(s *runtime.Scheme) error {
	gv := HostGVK.GroupVersion()
	s.AddKnownTypes(gv, &BareMetalHost{}, &BareMetalHostList{})
	metav1.AddToGroupVersion(s, gv)
	return nil
}

// Paused reports whether the host is paused with HostPausedAnnotation.
func (h *BareMetalHost) Paused() bool {
	_, ok := h.Annotations[HostPausedAnnotation]
	return ok
}
