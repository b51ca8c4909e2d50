package metadata

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// maxConcurrentPasses bounds how many CloudMetadata objects sync at once;
// they share the providers' budgets, so more would only queue there.
const maxConcurrentPasses = 4

// SetupWithManager registers the controller: a CloudMetadata's spec change
// or sync request, and a spec change of an AzureMetadata or AWSMetadata it
// references, trigger a pass; each pass schedules the next after syncEvery.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if err := r.UseManager(mgr, ControllerName); err != nil {
		return err
	}
	r.init()
	if r.subscriber.EventsOn() {
		r.subscriber.Subscribe(ControllerName, r)
		if err := mgr.Add(manager.RunnableFunc(r.runProbes)); err != nil {
			return err
		}
	}
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.CloudMetadata{}, azureRefIndex,
		indexRefs(func(c v1alpha1.CloudProviderRefs) *v1alpha1.LocalObjectRef { return c.AzureRef })); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.CloudMetadata{}, awsRefIndex,
		indexRefs(func(c v1alpha1.CloudProviderRefs) *v1alpha1.LocalObjectRef { return c.AWSRef })); err != nil {
		return err
	}
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(kit.Options(maxConcurrentPasses)).
		For(&v1alpha1.CloudMetadata{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&v1alpha1.AzureMetadata{}, handler.EnqueueRequestsFromMapFunc(r.referrers(azureRefIndex)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.AWSMetadata{}, handler.EnqueueRequestsFromMapFunc(r.referrers(awsRefIndex)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(r.wakeContests.Source()).
		WatchesRawSource(r.subscriber.EnqueueSource()).
		Complete(r)
}

// referrers maps a provider object to the CloudMetadata objects of its
// namespace that reference it.
func (r *Reconciler) referrers(index string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list v1alpha1.CloudMetadataList
		if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index: o.GetName()}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, len(list.Items))
		for i, cm := range list.Items {
			reqs[i] = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: cm.Namespace, Name: cm.Name}}
		}
		return reqs
	}
}
