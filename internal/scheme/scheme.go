// Package scheme builds the runtime.Scheme tagsync's clients use: the
// built-in Kubernetes types, the CSI snapshot API (which the workload tags
// controller reads where the cluster serves it) and tagsync's API.
package scheme

import (
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	tagsyncv1alpha1 "github.com/tagsync/tagsync/api/v1alpha1"
)

// New returns a scheme with the built-in Kubernetes types, the CSI
// snapshot API and tagsync's API.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := snapshotv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := tagsyncv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}
