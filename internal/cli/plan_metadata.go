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

// planMetadata plans one CloudMetadata: its references resolved by the
// controller's own metadata.Resolve (a broken one: nothing is written at
// all), then each request.
func planMetadata(ctx context.Context, c client.Reader, providers cloud.Providers, cm *v1alpha1.CloudMetadata, all []v1alpha1.CloudMetadata) (metadataPlan, error) {
	out := metadataPlan{Namespace: cm.Namespace, Name: cm.Name}
	objs, problems, err := metadata.Resolve(ctx, c, cm, metadata.ReferencingIn(all))
	if err != nil {
		return out, fmt.Errorf("CloudMetadata %s/%s: reading its references: %w", cm.Namespace, cm.Name, err)
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
