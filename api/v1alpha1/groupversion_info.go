// Package v1alpha1 holds the tagsync.io/v1alpha1 API: the custom resources
// that configure tagsync's controllers.
//
// +kubebuilder:object:generate=true
// +groupName=tagsync.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "tagsync.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &NodeTagSync{}, &NodeTagSyncList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
