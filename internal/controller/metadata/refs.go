package metadata

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// Field indexes on CloudMetadata, so that a provider object's events find
// the CloudMetadata objects that reference it.
const (
	azureRefIndex = "spec.cloudProvider.azureRef.name"
	awsRefIndex   = "spec.cloudProvider.awsRef.name"
)

// refProblem is why a CloudMetadata cannot act on a reference.
type refProblem struct {
	reason, message string
}

// resolved are the targets of a CloudMetadata and what is wrong with its
// references.
type resolved struct {
	targets  []*target
	problems []refProblem
}

// resolve reads the objects cm references. A reference to a missing object,
// or to one that an older CloudMetadata of the namespace already drives,
// is a problem and yields no target.
func (r *Reconciler) resolve(ctx context.Context, cm *v1alpha1.CloudMetadata) (resolved, error) {
	var out resolved
	refs := cm.Spec.CloudProvider
	if refs.AzureRef != nil {
		var o v1alpha1.AzureMetadata
		if err := r.resolveOne(ctx, cm, "AzureMetadata", refs.AzureRef.Name, azureRefIndex, &o, &out); err != nil {
			return out, err
		}
		if o.Name != "" {
			out.targets = append(out.targets, azureTarget(&o))
		}
	}
	if refs.AWSRef != nil {
		var o v1alpha1.AWSMetadata
		if err := r.resolveOne(ctx, cm, "AWSMetadata", refs.AWSRef.Name, awsRefIndex, &o, &out); err != nil {
			return out, err
		}
		if o.Name != "" {
			out.targets = append(out.targets, awsTarget(&o))
		}
	}
	if refs.AzureRef == nil && refs.AWSRef == nil {
		out.problems = append(out.problems, refProblem{ReasonNoProviderRef,
			"spec.cloudProvider names no azureRef or awsRef: there is nothing to apply"})
	}
	return out, nil
}

// resolveOne reads one referenced object into obj, leaving obj's name empty
// (and recording a problem) when it is missing or driven by another
// CloudMetadata.
func (r *Reconciler) resolveOne(ctx context.Context, cm *v1alpha1.CloudMetadata, kind, name, index string, obj client.Object, out *resolved) error {
	key := client.ObjectKey{Namespace: cm.Namespace, Name: name}
	if err := r.client.Get(ctx, key, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		obj.SetName("")
		out.problems = append(out.problems, refProblem{ReasonRefNotFound,
			fmt.Sprintf("%s %q does not exist in namespace %s: create it, or fix the reference", kind, name, cm.Namespace)})
		return nil
	}
	driver, err := r.driverOf(ctx, cm.Namespace, name, index)
	if err != nil {
		return err
	}
	if driver != cm.Name {
		obj.SetName("")
		out.problems = append(out.problems, refProblem{ReasonRefInUse,
			fmt.Sprintf("%s %q is already applied by CloudMetadata %q (the oldest that references it): an object is applied by one CloudMetadata; give this one its own %s", kind, name, driver, kind)})
	}
	return nil
}

// driverOf returns the name of the CloudMetadata that drives the provider
// object name: the oldest (then first by name) that references it.
func (r *Reconciler) driverOf(ctx context.Context, namespace, name, index string) (string, error) {
	var list v1alpha1.CloudMetadataList
	if err := r.client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{index: name}); err != nil {
		return "", fmt.Errorf("list CloudMetadata referencing %s: %w", name, err)
	}
	return Driver(list.Items), nil
}

// indexRefs returns the index functions of azureRefIndex and awsRefIndex.
func indexRefs(pick func(v1alpha1.CloudProviderRefs) *v1alpha1.LocalObjectRef) client.IndexerFunc {
	return func(o client.Object) []string {
		cm, ok := o.(*v1alpha1.CloudMetadata)
		if !ok {
			return nil
		}
		if ref := pick(cm.Spec.CloudProvider); ref != nil {
			return []string{ref.Name}
		}
		return nil
	}
}
