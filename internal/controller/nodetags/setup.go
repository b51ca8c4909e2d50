package nodetags

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// ctrlManager is the controller-runtime manager the controller runs in.
type ctrlManager = manager.Manager

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "nodetags"

func setup(mgr ctrlManager, r *Reconciler) error {
	if err := r.UseManager(mgr, ControllerName); err != nil {
		return err
	}
	r.init()
	nodes, err := nodeSourceFor(context.Background(), mgr, r.Client)
	if err != nil {
		return err
	}
	r.nodes = nodes
	r.subscriber.Subscribe(ControllerName, r)
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(kit.Options(1)).
		For(&v1alpha1.NodeTagSync{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&corev1.Node{}, r.nodeEvents(), builder.WithPredicates(nodeChanged())).
		WatchesRawSource(r.subscriber.EnqueueSource()).
		Complete(r)
}

// nodeEvents enqueues every NodeTagSync on a Node event (a full pass:
// see read.go), and forgets a deleted Node's bookkeeping.
func (r *Reconciler) nodeEvents() handler.EventHandler {
	all := handler.EnqueueRequestsFromMapFunc(r.allSyncs)
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.changes.nodeChanged()
			all.Create(ctx, e, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if r.ownEcho(ctx, e.ObjectOld, e.ObjectNew) {
				nodeEchoesTotal.WithLabelValues().Inc()
				return
			}
			r.changes.nodeChanged()
			all.Update(ctx, e, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.writes.Forget(e.Object.GetName())
			r.changes.nodeChanged()
			all.Delete(ctx, e, q)
		},
		GenericFunc: all.Generic,
	}
}

// allSyncs maps a Node event to every NodeTagSync: the workqueue collapses a
// burst of Node events into one pass per NodeTagSync.
func (r *Reconciler) allSyncs(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.NodeTagSyncList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i, nts := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: nts.Name}}
	}
	return reqs
}

// nodeChanged lets through Node creations and deletions, and updates that
// change what a sync reads: labels, taints, providerID, or the stored base.
// Status heartbeats are ignored.
func nodeChanged() predicate.Predicate {
	return predicate.And(kit.UpdateChanged(func(a, b *cachedNode) bool {
		return !maps.Equal(a.Labels, b.Labels) || a.Spec.ProviderID != b.Spec.ProviderID ||
			a.Annotations[v1alpha1.LastSyncedTagsAnnotation] != b.Annotations[v1alpha1.LastSyncedTagsAnnotation] ||
			!sameTaints(a.Spec.Taints, b.Spec.Taints)
	}), predicate.Funcs{GenericFunc: func(event.GenericEvent) bool { return false }})
}

// sameTaints reports whether two taint lists are equal, in order.
func sameTaints(a, b []corev1.Taint) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.Taint) bool { return x.MatchTaint(&y) && x.Value == y.Value })
}
