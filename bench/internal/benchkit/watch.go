package benchkit

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// Nodes is the Node resource.
var Nodes = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// MetaEvents are told of the harness's watch events: the object's
// metadata as delivered (a delete's last known state included).
type MetaEvents struct {
	Add, Update, Delete func(*metav1.PartialObjectMetadata)
}

// WatchMetadata runs a metadata-only informer on gvr (in namespace; ""
// for all or cluster-scoped), managedFields and annotations dropped, and
// returns once its initial list is in; cancel ctx to stop it.
func WatchMetadata(ctx context.Context, mc metadata.Interface, gvr schema.GroupVersionResource, namespace string, on MetaEvents) error {
	inf := metadatainformer.NewFilteredMetadataInformer(mc, gvr, namespace, 0, nil, nil).Informer()
	if err := inf.SetTransform(func(o any) (any, error) {
		if m, ok := o.(*metav1.PartialObjectMetadata); ok {
			m.ManagedFields, m.Annotations = nil, nil
		}
		return o, nil
	}); err != nil {
		return err
	}
	tell := func(fn func(*metav1.PartialObjectMetadata)) func(any) {
		return func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if m, ok := o.(*metav1.PartialObjectMetadata); ok {
				fn(m)
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    tell(on.Add),
		UpdateFunc: func(_, o any) { tell(on.Update)(o) },
		DeleteFunc: tell(on.Delete),
	}); err != nil {
		return err
	}
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("the harness's watch of %s did not sync", gvr.Resource)
	}
	return nil
}
