package infratags

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// SetupWithManager registers the adapter when the Infrastructure CRD
// exists; otherwise it adds a runnable that looks for the CRD every
// Options.CRDPollInterval and registers the adapter once it appears.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if err := r.UseManager(mgr, ControllerName); err != nil {
		return err
	}
	r.init()
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	if crdServed(dc) {
		return r.register(mgr)
	}
	mgr.GetLogger().WithName(ControllerName).Info("the Infrastructure CRD is not installed: the OpenShift adapter waits for it",
		"crd", InfrastructureCRD, "every", r.opts.CRDPollInterval)
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		t := time.NewTicker(r.opts.CRDPollInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				if crdServed(dc) {
					mgr.GetLogger().WithName(ControllerName).Info("the Infrastructure CRD appeared: starting the OpenShift adapter")
					return r.register(mgr)
				}
			}
		}
	}))
}

// crdServed reports whether the API server serves config.openshift.io/v1
// infrastructures.
func crdServed(dc discovery.DiscoveryInterface) bool {
	list, err := dc.ServerResourcesForGroupVersion(InfrastructureGVK.GroupVersion().String())
	if err != nil {
		return false
	}
	for _, res := range list.APIResources {
		if res.Name == "infrastructures" {
			return true
		}
	}
	return false
}

// register adds the controller: the Infrastructure named cluster, and the
// engine objects the adapter wrote (their status is the outcome it
// reports).
func (r *Reconciler) register(mgr manager.Manager) error {
	infra := &unstructured.Unstructured{}
	infra.SetGroupVersionKind(InfrastructureGVK)
	toInfra := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if o.GetNamespace() != r.opts.Namespace || o.GetLabels()[managedByLabel] != managedBy {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: InfrastructureName}}}
	})
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(kit.Options(1)).
		For(infra, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == InfrastructureName
		}))).
		Watches(&v1alpha1.CloudMetadata{}, toInfra).
		Watches(&v1alpha1.AzureMetadata{}, toInfra).
		Watches(&v1alpha1.AWSMetadata{}, toInfra).
		Complete(r)
}
