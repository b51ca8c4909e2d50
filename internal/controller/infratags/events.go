package infratags

import (
	"context"
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/notify"
)

// Event reasons, on the Infrastructure.
const (
	// ReasonInvalidUserTags: the tags break the installer's rules; nothing
	// of the set is applied.
	ReasonInvalidUserTags = "InvalidUserTags"
	// ReasonInvalidInfrastructure: the Infrastructure cannot be read (no
	// infrastructure name, malformed tag list).
	ReasonInvalidInfrastructure = "InvalidInfrastructure"
	// ReasonUserTagsApplied: every resource in scope carries the tags.
	ReasonUserTagsApplied = "UserTagsApplied"
	// ReasonUserTagsFailed: some resources do not.
	ReasonUserTagsFailed = "UserTagsFailed"
	// ReasonEngineWriteFailed: the engine objects could not be written.
	ReasonEngineWriteFailed = "EngineWriteFailed"
)

// report tells the Infrastructure what the engine did for each cloud: an
// event per outcome, and for the proposal's schema the failed resources in
// status.platformStatus.azure.resourceTags.
func (r *Reconciler) report(ctx context.Context, infra *unstructured.Unstructured, clouds []string) error {
	for _, cloud := range clouds {
		st, gen, ok := r.engineStatus(ctx, cloud)
		if !ok || st.ObservedGeneration != gen || st.LastSyncTime == nil {
			continue // the engine has not served this request yet
		}
		r.event(infra, cloud, st)
		if cloud == "azure" {
			if err := r.reportFailures(ctx, infra, st); err != nil {
				return err
			}
		}
	}
	return nil
}

// engineStatus reads the status of a cloud's engine object.
func (r *Reconciler) engineStatus(ctx context.Context, cloud string) (v1alpha1.ProviderMetadataStatus, int64, bool) {
	var obj client.Object = &v1alpha1.AzureMetadata{}
	name := AzureMetadataName
	if cloud == "aws" {
		obj, name = &v1alpha1.AWSMetadata{}, AWSMetadataName
	}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.opts.Namespace, Name: name}, obj); err != nil {
		return v1alpha1.ProviderMetadataStatus{}, 0, false
	}
	switch o := obj.(type) {
	case *v1alpha1.AzureMetadata:
		return o.Status, o.Generation, true
	case *v1alpha1.AWSMetadata:
		return o.Status, o.Generation, true
	}
	return v1alpha1.ProviderMetadataStatus{}, 0, false
}

// event reports one cloud's outcome, once per distinct outcome.
func (r *Reconciler) event(infra *unstructured.Unstructured, cloud string, st v1alpha1.ProviderMetadataStatus) {
	if st.Failed == 0 {
		note := fmt.Sprintf("%s: user tags applied to %d resources", cloud, st.Matched)
		r.notes.Once(infra, "outcome/"+cloud+"/"+note, ReasonUserTagsApplied, note)
		return
	}
	var first []string
	for _, f := range st.Failures {
		first = append(first, fmt.Sprintf("%s (%s)", path.Base(f.Resource), f.Reason))
	}
	kind, name := "azuremetadata", AzureMetadataName
	if cloud == "aws" {
		kind, name = "awsmetadata", AWSMetadataName
	}
	note := fmt.Sprintf("%s: user tags applied to %d of %d resources, failed on %d: %s (each error: kubectl get %s -n %s %s -o yaml)",
		cloud, st.InSync, st.Matched, st.Failed, notify.Summary(first, 3), kind, r.opts.Namespace, name)
	r.notes.Once(infra, "outcome/"+cloud+"/"+note, ReasonUserTagsFailed, note)
}

// reportFailures writes the failed Azure resources as {name, error} into
// status.platformStatus.azure.resourceTags, when the installed CRD has
// that (the proposal's) schema; OpenShift as shipped keeps its tag list
// there and is never written.
func (r *Reconciler) reportFailures(ctx context.Context, infra *unstructured.Unstructured, st v1alpha1.ProviderMetadataStatus) error {
	seed, err := r.isSeedShape(ctx)
	if err != nil || !seed {
		return err
	}
	failures := make([]any, 0, len(st.Failures))
	for _, f := range st.Failures {
		failures = append(failures, map[string]any{"name": f.Resource, "error": f.Reason + ": " + f.Message})
	}
	current, _, _ := unstructured.NestedSlice(infra.Object, "status", "platformStatus", "azure", "resourceTags")
	if equality.Semantic.DeepEqual(current, failures) || (len(current) == 0 && len(failures) == 0) {
		return nil
	}
	before := infra.DeepCopy()
	if err := unstructured.SetNestedSlice(infra.Object, failures, "status", "platformStatus", "azure", "resourceTags"); err != nil {
		return err
	}
	if err := r.Client.Status().Patch(ctx, infra, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patch the Infrastructure's status: %w", err)
	}
	return nil
}

// isSeedShape reports whether the installed Infrastructure CRD lists
// {name, error} items in status.platformStatus.azure.resourceTags.
func (r *Reconciler) isSeedShape(ctx context.Context) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seedShape != nil {
		return *r.seedShape, nil
	}
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := r.Client.Get(ctx, client.ObjectKey{Name: InfrastructureCRD}, crd); err != nil {
		return false, fmt.Errorf("read the Infrastructure CRD: %w", err)
	}
	seed := false
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		_, found, _ := unstructured.NestedMap(vm, "schema", "openAPIV3Schema", "properties", "status", "properties", "platformStatus",
			"properties", "azure", "properties", "resourceTags", "items", "properties", "error")
		seed = seed || found
	}
	r.seedShape = &seed
	return seed, nil
}
