package infratags

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/openshift"
)

// Names of the engine objects the adapter writes, in Options.Namespace.
const (
	CloudMetadataName = "openshift-infrastructure"
	AzureMetadataName = "openshift-infrastructure-azure"
	AWSMetadataName   = "openshift-infrastructure-aws"
)

// managedByLabel marks the engine objects as the adapter's.
const managedByLabel = "app.kubernetes.io/managed-by"

// managedBy is managedByLabel's value.
const managedBy = "tagsync-infratags"

// applyClouds validates each cloud's tags and writes its engine object;
// it returns the clouds whose request is in place (valid now, or kept
// from before when the new set is invalid), and the write failures: the
// caller returns them so the pass is retried with backoff (on OpenShift
// as shipped the Infrastructure never changes again to trigger one).
func (r *Reconciler) applyClouds(ctx context.Context, infra *unstructured.Unstructured, in infrastructure) ([]string, error) {
	var clouds []string
	var refs v1alpha1.CloudProviderRefs
	var errs []error
	classifiers := map[string]string{}
	for _, c := range []struct {
		cloud    string
		d        *desired
		validate func(map[string]string) error
		object   func(infrastructure) client.Object
		ref      **v1alpha1.LocalObjectRef
		name     string
		owned    string
	}{
		{"azure", in.azure, openshift.ValidateUserTags, r.azureObject, &refs.AzureRef, AzureMetadataName, r.opts.AzureOwnedTag},
		{"aws", in.aws, openshift.ValidateAWSUserTags, r.awsObject, &refs.AWSRef, AWSMetadataName, r.opts.AWSOwnedTag},
	} {
		if c.d == nil {
			continue
		}
		ok, err := r.apply(ctx, infra, c.cloud, c.d, c.validate, c.object(in))
		errs = append(errs, err)
		if ok {
			clouds = append(clouds, c.cloud)
			*c.ref = &v1alpha1.LocalObjectRef{Name: c.name}
			classifiers[ownedTag(c.owned, in.infraID)] = "owned"
		}
	}
	if len(clouds) == 0 {
		return nil, errors.Join(errs...)
	}
	cm := &v1alpha1.CloudMetadata{ObjectMeta: r.meta(CloudMetadataName), Spec: v1alpha1.CloudMetadataSpec{
		Classifiers:      classifiers,
		ControllerConfig: v1alpha1.ControllerConfig{Limit: v1alpha1.LimitPartial, SyncEvery: r.opts.SyncEvery.String()},
		CloudProvider:    refs,
		// As the API server defaults it, so the spec compares equal.
		DeletionPolicy: v1alpha1.DeletionPolicyDelete,
	}}
	errs = append(errs, r.writeOrWarn(ctx, infra, cm))
	return clouds, errors.Join(errs...)
}

// writeOrWarn writes an engine object; a failure is reported once per
// distinct error (not once per retry) and returned.
func (r *Reconciler) writeOrWarn(ctx context.Context, infra *unstructured.Unstructured, obj client.Object) error {
	err := r.write(ctx, infra, obj)
	if err != nil {
		r.notes.Once(infra, "write/"+obj.GetName()+"/"+err.Error(), ReasonEngineWriteFailed, err.Error())
	}
	return err
}

// apply validates one cloud's tags and, when they are valid, writes its
// engine object. It reports whether the cloud's request is in place (an
// invalid set is reported and leaves an earlier request as it was) and
// the write's failure.
func (r *Reconciler) apply(ctx context.Context, infra *unstructured.Unstructured, cloud string, d *desired,
	validate func(map[string]string) error, obj client.Object) (bool, error) {
	if err := problems(d, validate); err != nil {
		note := fmt.Sprintf("the %s user tags (from %s) break the OpenShift installer's rules; none of them is applied: %s",
			cloud, d.source, strings.ReplaceAll(err.Error(), "\n", "; "))
		r.notes.Once(infra, "invalid/"+cloud+"/"+note, ReasonInvalidUserTags, note)
		invalidTotal.WithLabelValues(cloud).Inc()
		return r.exists(ctx, obj), nil
	}
	if err := r.writeOrWarn(ctx, infra, obj); err != nil {
		return r.exists(ctx, obj), err
	}
	return true, nil
}

// problems is every reason the installer would refuse d, keys listed twice
// included.
func problems(d *desired, validate func(map[string]string) error) error {
	var errs []error
	for _, k := range d.duplicates {
		errs = append(errs, fmt.Errorf("key %q is listed more than once", k))
	}
	if err := validate(d.tags); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// azureObject is the AzureMetadata for the Infrastructure's Azure tags.
func (r *Reconciler) azureObject(in infrastructure) client.Object {
	o := &v1alpha1.AzureMetadata{ObjectMeta: r.meta(AzureMetadataName), Spec: v1alpha1.AzureMetadataSpec{
		Opcode: v1alpha1.OpcodeUpdate, ResourceTags: in.azure.tags}}
	if in.resourceGroup != "" && len(in.infraID) >= 3 {
		o.Spec.ResourceGroups = []v1alpha1.ResourceGroupScope{{Name: in.resourceGroup, NamePrefix: in.infraID}}
	}
	return o
}

// awsObject is the AWSMetadata for the Infrastructure's AWS tags.
func (r *Reconciler) awsObject(in infrastructure) client.Object {
	o := &v1alpha1.AWSMetadata{ObjectMeta: r.meta(AWSMetadataName), Spec: v1alpha1.AWSMetadataSpec{
		Opcode: v1alpha1.OpcodeUpdate, ResourceTags: map[string]v1alpha1.AWSTagValue{}}}
	for k, v := range in.aws.tags {
		o.Spec.ResourceTags[k] = v
	}
	if in.region != "" {
		o.Spec.Regions = []string{in.region}
	}
	return o
}

// meta is the metadata of an engine object.
func (r *Reconciler) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: name, Labels: map[string]string{managedByLabel: managedBy}}
}

// write creates obj, or updates its spec, labels and annotations when its
// spec differs or it lacks the adapter's label or source annotation
// (controllerutil.CreateOrUpdate: one read, then one create or update).
// The objects carry no owner reference to the Infrastructure: OpenShift's
// OwnerReferencesPermissionEnforcement admission plugin lets only a client
// with delete rights on an object set its owner references (and update
// rights on the owner's finalizers for blockOwnerDeletion), rights the
// adapter does not otherwise need; the Infrastructure named cluster lives
// as long as the cluster, and the objects are labelled and annotated with
// their source instead.
func (r *Reconciler) write(ctx context.Context, infra *unstructured.Unstructured, obj client.Object) error {
	obj.SetAnnotations(map[string]string{v1alpha1.SourceAnnotation: "Infrastructure " + infra.GetName() + " (" + InfrastructureGVK.GroupVersion().String() + ")"})
	desired := obj.DeepCopyObject().(client.Object)
	existed, mutated := false, false
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
		mutated, existed = true, obj.GetResourceVersion() != ""
		if equality.Semantic.DeepEqual(kit.Field(obj, "Spec"), kit.Field(desired, "Spec")) && obj.GetLabels()[managedByLabel] == managedBy &&
			obj.GetAnnotations()[v1alpha1.SourceAnnotation] != "" {
			return nil
		}
		reflect.Indirect(reflect.ValueOf(obj)).FieldByName("Spec").Set(reflect.Indirect(reflect.ValueOf(desired)).FieldByName("Spec"))
		obj.SetLabels(desired.GetLabels())
		obj.SetAnnotations(desired.GetAnnotations())
		return nil
	})
	switch {
	case err == nil || !mutated: // done, or the read failed
		return err
	case existed:
		return fmt.Errorf("update %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return fmt.Errorf("create %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
}

// exists reports whether an engine object is there (from an earlier pass).
func (r *Reconciler) exists(ctx context.Context, obj client.Object) bool {
	current := obj.DeepCopyObject().(client.Object)
	return r.Client.Get(ctx, client.ObjectKeyFromObject(obj), current) == nil
}
