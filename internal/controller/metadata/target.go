package metadata

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

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
