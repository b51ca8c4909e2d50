package workloadtags

import (
	"context"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// maxConcurrentPasses bounds how many policies sync at once; they share
// the providers' budgets.
const maxConcurrentPasses = 2

// SetupWithManager registers the controller: a policy's spec change, and
// any change of a Namespace's labels or annotations, a PersistentVolume
// (bound, re-bound, released), a claim's labels or annotations, a Service
// or an Ingress (labels, annotations, type or class, load balancer), passes
// every policy (a pass reads only the cache until it reads the cloud, and
// writes only what differs); another policy's spec change passes the
// others too, since it may contest their keys. Each pass schedules the
// next after syncEvery. Where the cluster serves the CSI snapshot API, a
// VolumeSnapshotContent made, cut, re-bound or deleted, or a
// VolumeSnapshot's labels or annotations changing, passes them too.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if err := r.UseManager(mgr, ControllerName); err != nil {
		return err
	}
	r.init()
	r.subscriber.Subscribe(ControllerName, r)
	all := handler.EnqueueRequestsFromMapFunc(r.allPolicies)
	b := builder.ControllerManagedBy(mgr)
	if servesSnapshots(mgr) {
		b = b.Watches(&snapshotv1.VolumeSnapshotContent{}, all, builder.WithPredicates(kit.UpdateChanged(snapshotChanged))).
			Watches(&snapshotv1.VolumeSnapshot{}, all, builder.WithPredicates(metadataChanged()))
	}
	return b.
		Named(ControllerName).
		WithOptions(kit.Options(maxConcurrentPasses)).
		For(&v1alpha1.WorkloadTagPolicy{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&v1alpha1.WorkloadTagPolicy{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, all, builder.WithPredicates(metadataChanged())).
		Watches(&corev1.PersistentVolumeClaim{}, all, builder.WithPredicates(metadataChanged())).
		Watches(&corev1.PersistentVolume{}, all, builder.WithPredicates(kit.UpdateChanged(volumeChanged))).
		Watches(&corev1.Service{}, all, builder.WithPredicates(predicate.Or(metadataChanged(), kit.UpdateChanged(serviceChanged)))).
		Watches(&networkingv1.Ingress{}, all, builder.WithPredicates(predicate.Or(metadataChanged(), kit.UpdateChanged(ingressChanged)))).
		WatchesRawSource(r.subscriber.EnqueueSource()).
		Complete(r)
}

// metadataChanged passes creations, deletions, and updates of labels or
// annotations.
func metadataChanged() predicate.Predicate {
	return predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})
}

// volumeChanged reports a change that moves a volume between workloads
// or resources: its claim, its phase or its source.
func volumeChanged(old, cur *corev1.PersistentVolume) bool {
	return claimOf(old) != claimOf(cur) || old.Status.Phase != cur.Status.Phase ||
		old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero()
}

// serviceChanged reports a change of a Service's type or load balancer
// status (its public IP made or replaced).
func serviceChanged(old, cur *corev1.Service) bool {
	return old.Spec.Type != cur.Spec.Type || !equality.Semantic.DeepEqual(old.Status.LoadBalancer, cur.Status.LoadBalancer) ||
		old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero()
}

// ingressChanged reports a change of an Ingress's class or load balancer
// status (its ALB made or replaced).
func ingressChanged(old, cur *networkingv1.Ingress) bool {
	return !equality.Semantic.DeepEqual(old.Spec.IngressClassName, cur.Spec.IngressClassName) ||
		!equality.Semantic.DeepEqual(old.Status.LoadBalancer, cur.Status.LoadBalancer) ||
		old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero()
}

// claimOf names a volume's claim ("" when none).
func claimOf(pv *corev1.PersistentVolume) string {
	if pv.Spec.ClaimRef == nil {
		return ""
	}
	return pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name
}

// allPolicies lists every policy.
func (r *Reconciler) allPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.WorkloadTagPolicyList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i, o := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: o.Name}}
	}
	return reqs
}

// servesSnapshots reports whether the cluster serves
// snapshot.storage.k8s.io/v1 VolumeSnapshotContent (the CSI snapshot
// CRDs), checked once, when the controller starts.
func servesSnapshots(mgr manager.Manager) bool {
	_, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: snapshotv1.GroupName, Kind: "VolumeSnapshotContent"}, snapshotv1.SchemeGroupVersion.Version)
	return err == nil
}
