package cli

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/metadata"
)

// collectMetadata plans every (or the named) CloudMetadata of the
// selected namespaces.
func (r *planReport) collectMetadata(ctx context.Context, c client.Reader, providers cloud.Providers, sel planSelection) error {
	var list v1alpha1.CloudMetadataList
	var opts []client.ListOption
	if !sel.allNamespaces {
		opts = append(opts, client.InNamespace(sel.namespace))
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		return fmt.Errorf("listing CloudMetadata: %w", err)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		if sel.name != "" && cm.Name != sel.name {
			continue
		}
		p, err := planMetadata(ctx, c, providers, cm, list.Items)
		if err != nil {
			return err
		}
		r.CloudMetadata = append(r.CloudMetadata, p)
	}
	return nil
}

// planMetadata plans one CloudMetadata: its references resolved as the
// controller resolves them (a broken one: nothing is written at all), then
// each request.
func planMetadata(ctx context.Context, c client.Reader, providers cloud.Providers, cm *v1alpha1.CloudMetadata, all []v1alpha1.CloudMetadata) (metadataPlan, error) {
	out := metadataPlan{Namespace: cm.Namespace, Name: cm.Name}
	objs, problems, err := resolveRefs(ctx, c, cm, all)
	if err != nil {
		return out, err
	}
	if len(problems) > 0 {
		out.Problem = "nothing would be written: " + strings.Join(problems, "; ")
		return out, nil
	}
	for _, obj := range objs {
		q, err := planRequest(ctx, providers, cm, obj)
		if err != nil {
			return out, err
		}
		out.Requests = append(out.Requests, q)
	}
	return out, nil
}

// resolveRefs reads the objects cm references and says what is wrong with
// its references: a missing object, one an older CloudMetadata drives, no
// reference at all.
func resolveRefs(ctx context.Context, c client.Reader, cm *v1alpha1.CloudMetadata, all []v1alpha1.CloudMetadata) ([]client.Object, []string, error) {
	refs := cm.Spec.CloudProvider
	if refs.AzureRef == nil && refs.AWSRef == nil {
		return nil, []string{"spec.cloudProvider names no azureRef or awsRef"}, nil
	}
	var objs []client.Object
	var problems []string
	add := func(kind string, ref *v1alpha1.LocalObjectRef, obj client.Object, pick func(v1alpha1.CloudProviderRefs) *v1alpha1.LocalObjectRef) error {
		if ref == nil {
			return nil
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: cm.Namespace, Name: ref.Name}, obj); err != nil {
			if !isNotFound(err) {
				return fmt.Errorf("reading %s %s/%s: %w", kind, cm.Namespace, ref.Name, err)
			}
			problems = append(problems, fmt.Sprintf("%s %q does not exist in namespace %s", kind, ref.Name, cm.Namespace))
			return nil
		}
		if d := metadata.Driver(referencing(all, cm.Namespace, ref.Name, pick)); d != cm.Name {
			problems = append(problems, fmt.Sprintf("%s %q is applied by CloudMetadata %q (the oldest that references it)", kind, ref.Name, d))
			return nil
		}
		objs = append(objs, obj)
		return nil
	}
	if err := add("AzureMetadata", refs.AzureRef, &v1alpha1.AzureMetadata{}, azureRefOf); err != nil {
		return nil, nil, err
	}
	if err := add("AWSMetadata", refs.AWSRef, &v1alpha1.AWSMetadata{}, awsRefOf); err != nil {
		return nil, nil, err
	}
	return objs, problems, nil
}

func azureRefOf(r v1alpha1.CloudProviderRefs) *v1alpha1.LocalObjectRef { return r.AzureRef }
func awsRefOf(r v1alpha1.CloudProviderRefs) *v1alpha1.LocalObjectRef   { return r.AWSRef }

// referencing returns the CloudMetadata of namespace whose reference (as
// pick reads it) names name.
func referencing(all []v1alpha1.CloudMetadata, namespace, name string, pick func(v1alpha1.CloudProviderRefs) *v1alpha1.LocalObjectRef) []v1alpha1.CloudMetadata {
	var out []v1alpha1.CloudMetadata
	for _, cm := range all {
		if ref := pick(cm.Spec.CloudProvider); cm.Namespace == namespace && ref != nil && ref.Name == name && cm.DeletionTimestamp == nil {
			out = append(out, cm)
		}
	}
	return out
}

// planRequest plans one AzureMetadata or AWSMetadata with the controller's
// Request: validation, discovery (the one cloud read), the pure plan.
func planRequest(ctx context.Context, providers cloud.Providers, cm *v1alpha1.CloudMetadata, obj client.Object) (requestPlan, error) {
	req, err := metadata.NewRequest(cm, obj)
	if err != nil {
		return requestPlan{}, err
	}
	out := requestPlan{Kind: req.Kind, Name: obj.GetName(), Cloud: req.Cloud, Opcode: string(req.Lifecycle.Opcode)}
	provider, err := providers.ClassifiedProvider(req.Cloud)
	if err != nil {
		out.Problem = fmt.Sprintf("nothing would be written: %v (tagsync run needs the %s flags; give them to plan too)", err, req.Cloud)
		return out, nil
	}
	if err := req.Validate(provider.Rules()); err != nil {
		out.Problem = "nothing would be written: the request breaks the cloud's rules: " + err.Error()
		return out, nil
	}
	disc, err := provider.Discover(ctx, req.Classifiers, req.Discover)
	if err != nil {
		return out, fmt.Errorf("%s %s/%s: discovering the classified resources: %w", req.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	for _, f := range disc.Failed {
		out.Failed = append(out.Failed, fmt.Sprintf("%s: %v", f.Scope, f.Err))
	}
	plans := req.Plan(disc.Resources, heldOf(obj))
	out.Matched = len(plans)
	for _, pl := range plans {
		if pl.Plan.InSync() {
			out.InSync++
			continue
		}
		out.Resources = append(out.Resources, metadataDiff(req.Cloud, pl))
	}
	return out, nil
}

// heldOf returns what an object's status records it holding (status.held),
// which is what the controller, even one started now, takes as its own.
func heldOf(obj client.Object) func(string) func(string) bool {
	switch o := obj.(type) {
	case *v1alpha1.AzureMetadata:
		return metadata.HeldLookup(o.Status)
	case *v1alpha1.AWSMetadata:
		return metadata.HeldLookup(o.Status)
	}
	return nil
}

// metadataDiff renders one resource's plan: the writes a pass would make
// and the tags it would report instead.
func metadataDiff(cloudName string, pl metadata.Planned) resourceDiff {
	res := pl.Resource
	nc := res.Rules.NameCase()
	return resourceDiff{Cloud: cloudName, ID: res.ID, Changes: patchChanges(nc, res.Tags, pl.Plan.Patch),
		NotWritten: skippedNotes(pl.Plan.Skipped)}
}
