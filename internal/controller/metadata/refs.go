package metadata

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
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

// Referencing lists the CloudMetadata of namespace whose reference to a
// kind (AzureMetadata or AWSMetadata) names name. The controller answers
// from its cache's field index, `tagsync plan` from one list
// (ReferencingIn).
type Referencing func(ctx context.Context, namespace, kind, name string) ([]v1alpha1.CloudMetadata, error)

// Resolve reads the provider objects cm drives, as a pass does, and says
// what is wrong with its references (a missing object, one an older
// CloudMetadata drives, no reference at all); a pass of a CloudMetadata
// with problems writes nothing. c reads the provider objects. A
// CloudMetadata being deleted (a finalizer holds it) still drives its
// objects until it is gone.
func Resolve(ctx context.Context, c client.Reader, cm *v1alpha1.CloudMetadata, referencing Referencing) ([]client.Object, []string, error) {
	res, err := resolveRefs(ctx, c, cm, referencing)
	var objs []client.Object
	for _, t := range res.targets {
		objs = append(objs, t.obj)
	}
	var problems []string
	for _, p := range res.problems {
		problems = append(problems, p.message)
	}
	return objs, problems, err
}

// ReferencingIn answers Referencing from all, the CloudMetadata already
// read.
func ReferencingIn(all []v1alpha1.CloudMetadata) Referencing {
	return func(_ context.Context, namespace, kind, name string) ([]v1alpha1.CloudMetadata, error) {
		var out []v1alpha1.CloudMetadata
		for _, cm := range all {
			if ref := refOf(kind, cm.Spec.CloudProvider); cm.Namespace == namespace && ref != nil && ref.Name == name {
				out = append(out, cm)
			}
		}
		return out, nil
	}
}

// refOf is a CloudMetadata's reference to kind.
func refOf(kind string, refs v1alpha1.CloudProviderRefs) *v1alpha1.LocalObjectRef {
	if kind == "AWSMetadata" {
		return refs.AWSRef
	}
	return refs.AzureRef
}

// resolve reads the objects cm references, through the cache.
func (r *Reconciler) resolve(ctx context.Context, cm *v1alpha1.CloudMetadata) (resolved, error) {
	return resolveRefs(ctx, r.Client, cm, r.referencing)
}

// resolveRef reads the object ref names (nil: none) into a new T and adds
// its target to out, unless it is missing or driven by another
// CloudMetadata (a problem resolveOne records).
func resolveRef[T any, P interface {
	*T
	client.Object
}](ctx context.Context, c client.Reader, cm *v1alpha1.CloudMetadata, referencing Referencing,
	ref *v1alpha1.LocalObjectRef, target func(P) *target, out *resolved) error {
	if ref == nil {
		return nil
	}
	o := P(new(T))
	if err := resolveOne(ctx, c, cm, referencing, ref.Name, o, out); err != nil {
		return err
	}
	if o.GetName() != "" {
		out.targets = append(out.targets, target(o))
	}
	return nil
}

// resolveRefs reads the objects cm references. A reference to a missing
// object, or to one that an older CloudMetadata of the namespace already
// drives, is a problem and yields no target.
func resolveRefs(ctx context.Context, c client.Reader, cm *v1alpha1.CloudMetadata, referencing Referencing) (resolved, error) {
	var out resolved
	refs := cm.Spec.CloudProvider
	if err := resolveRef(ctx, c, cm, referencing, refs.AzureRef, azureTarget, &out); err != nil {
		return out, err
	}
	if err := resolveRef(ctx, c, cm, referencing, refs.AWSRef, awsTarget, &out); err != nil {
		return out, err
	}
	if refs.AzureRef == nil && refs.AWSRef == nil {
		out.problems = append(out.problems, refProblem{ReasonNoProviderRef,
			"spec.cloudProvider names no azureRef or awsRef: there is nothing to apply"})
	}
	return out, nil
}

// resolveOne reads one referenced object into obj (an *AzureMetadata or
// *AWSMetadata), leaving obj's name empty (and recording a problem) when it
// is missing or driven by another CloudMetadata.
func resolveOne(ctx context.Context, c client.Reader, cm *v1alpha1.CloudMetadata, referencing Referencing, name string, obj client.Object, out *resolved) error {
	kind := "AzureMetadata"
	if _, ok := obj.(*v1alpha1.AWSMetadata); ok {
		kind = "AWSMetadata"
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cm.Namespace, Name: name}, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		obj.SetName("")
		out.problems = append(out.problems, refProblem{ReasonRefNotFound,
			fmt.Sprintf("%s %q does not exist in namespace %s: create it, or fix the reference", kind, name, cm.Namespace)})
		return nil
	}
	others, err := referencing(ctx, cm.Namespace, kind, name)
	if err != nil {
		return err
	}
	if driver := Driver(others); driver != cm.Name {
		obj.SetName("")
		out.problems = append(out.problems, refProblem{ReasonRefInUse,
			fmt.Sprintf("%s %q is already applied by CloudMetadata %q (the oldest that references it): an object is applied by one CloudMetadata; give this one its own %s", kind, name, driver, kind)})
	}
	return nil
}

// referencing lists, from the cache's field index, the CloudMetadata that
// reference the provider object name of kind.
func (r *Reconciler) referencing(ctx context.Context, namespace, kind, name string) ([]v1alpha1.CloudMetadata, error) {
	index := azureRefIndex
	if kind == "AWSMetadata" {
		index = awsRefIndex
	}
	var list v1alpha1.CloudMetadataList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{index: name}); err != nil {
		return nil, fmt.Errorf("list CloudMetadata referencing %s: %w", name, err)
	}
	return list.Items, nil
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

// Cloud names, as the providers call themselves.
const (
	cloudAzure = "azure"
	cloudAWS   = "aws"
)

// target is one provider object (AzureMetadata or AWSMetadata) that a
// CloudMetadata drives, seen the same way whatever its cloud.
type target struct {
	// cloud is the provider's name.
	cloud string
	// kind is the object's kind, for messages, events and audit records.
	kind string
	// obj is the object itself (for patches and events).
	obj client.Object
	// status is the object's status as stored.
	status *v1alpha1.ProviderMetadataStatus
	// opcode, resourceTags and ignoreTags are the spec's request.
	opcode       v1alpha1.Opcode
	resourceTags map[string]string
	ignoreTags   []string
	// scopes are the subscriptions (Azure) or regions (AWS) to search.
	scopes []string
	// named adds resources by group and name prefix (Azure).
	named []cloud.NameScope
	// suspend is the object's spec.suspend: nothing is written for it.
	suspend bool
}

// azureTarget views an AzureMetadata as a target.
func azureTarget(o *v1alpha1.AzureMetadata) *target {
	t := &target{cloud: cloudAzure, kind: "AzureMetadata", obj: o, status: &o.Status,
		opcode: o.Spec.Opcode, resourceTags: o.Spec.ResourceTags, ignoreTags: o.Spec.IgnoreTags, scopes: o.Spec.Subscriptions,
		suspend: o.Spec.Suspend}
	for _, g := range o.Spec.ResourceGroups {
		t.named = append(t.named, cloud.NameScope{Group: g.Name, NamePrefix: g.NamePrefix})
	}
	return t
}

// awsTarget views an AWSMetadata as a target.
func awsTarget(o *v1alpha1.AWSMetadata) *target {
	return &target{cloud: cloudAWS, kind: "AWSMetadata", obj: o, status: &o.Status,
		opcode: o.Spec.Opcode, resourceTags: o.Spec.ResourceTags, ignoreTags: o.Spec.IgnoreTags, scopes: o.Spec.Regions,
		suspend: o.Spec.Suspend}
}

// lifecycle turns the request into the pure planner's input.
func (t *target) lifecycle(limit v1alpha1.LimitPolicy) tags.Lifecycle {
	l := tags.Lifecycle{Opcode: tags.Opcode(t.opcode), Tags: tags.Set(t.resourceTags).Clone(),
		Ignore: t.ignoreTags, Owned: tags.Set(t.status.ResourceTags), Limit: tags.LimitPolicy(limit)}
	if l.Tags == nil {
		l.Tags = tags.Set{}
	}
	return l
}

// validate checks the request against the cloud's rules: every name, every
// value that will be written (delete values are only compared), and names
// that the cloud would take as one. It returns nil or every problem joined.
func (t *target) validate(rules tags.Rules) error {
	set := tags.Set(t.resourceTags)
	if t.opcode != v1alpha1.OpcodeDelete {
		return rules.ValidateSet(set)
	}
	names := tags.Set{}
	for n := range set {
		names[n] = ""
	}
	return rules.ValidateSet(names)
}

// key names the object for maps and logs: kind/name.
func (t *target) key() string { return t.kind + "/" + t.obj.GetName() }
