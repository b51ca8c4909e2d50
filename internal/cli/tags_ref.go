package cli

import (
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/tags"
)

// providerKind is AzureMetadata or AWSMetadata, as `tags` edits them.
type providerKind struct {
	// kind is the Kind; resource the lower-case plural resource name.
	kind, resource string
	newObject      func() client.Object
	newList        func() client.ObjectList
	// view points into an object's spec.
	view func(client.Object) providerSpec
	// rules are the cloud's tag rules (what the controller approves).
	rules tags.Rules
	// admission checks what the API server's schema and CEL rules check.
	admission func(providerSpec) []string
}

// providerSpec points at the fields of a provider object's spec that
// `tags` edits.
type providerSpec struct {
	opcode *v1alpha1.Opcode
	tags   *map[string]string
	ignore *[]string
}

var azureKind = providerKind{
	kind: "AzureMetadata", resource: "azuremetadata", rules: azure.TagRules, admission: azureAdmission,
	newObject: func() client.Object { return &v1alpha1.AzureMetadata{} },
	newList:   func() client.ObjectList { return &v1alpha1.AzureMetadataList{} },
	view: func(o client.Object) providerSpec {
		s := &o.(*v1alpha1.AzureMetadata).Spec
		return providerSpec{opcode: &s.Opcode, tags: &s.ResourceTags, ignore: &s.IgnoreTags}
	},
}

var awsKind = providerKind{
	kind: "AWSMetadata", resource: "awsmetadata", rules: aws.TagRules, admission: awsAdmission,
	newObject: func() client.Object { return &v1alpha1.AWSMetadata{} },
	newList:   func() client.ObjectList { return &v1alpha1.AWSMetadataList{} },
	view: func(o client.Object) providerSpec {
		s := &o.(*v1alpha1.AWSMetadata).Spec
		return providerSpec{opcode: &s.Opcode, tags: &s.ResourceTags, ignore: &s.IgnoreTags}
	},
}

// objectRef is the provider object an edit is for.
type objectRef struct {
	kind      providerKind
	namespace string
	name      string
}

// String names the object as messages do: AzureMetadata platform/demo.
func (r objectRef) String() string {
	return fmt.Sprintf("%s %s/%s", r.kind.kind, r.namespace, r.name)
}

// key is the object's key.
func (r objectRef) key() client.ObjectKey {
	return client.ObjectKey{Namespace: r.namespace, Name: r.name}
}

// parseObjectRef parses TYPE/NAME, where TYPE is azuremetadata or
// awsmetadata as kubectl spells resources (any case, singular or plural,
// with or without .tagsync.io), or the short azure or aws.
func parseObjectRef(arg, namespace string) (objectRef, error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return objectRef{}, fmt.Errorf("%q: name the object as TYPE/NAME, e.g. azuremetadata/prod-azure or awsmetadata/prod-aws", arg)
	}
	switch strings.TrimSuffix(strings.ToLower(typ), ".tagsync.io") {
	case "azuremetadata", "azuremetadatas", "azure":
		return objectRef{kind: azureKind, namespace: namespace, name: name}, nil
	case "awsmetadata", "awsmetadatas", "aws":
		return objectRef{kind: awsKind, namespace: namespace, name: name}, nil
	}
	return objectRef{}, fmt.Errorf("%q: tags edits azuremetadata or awsmetadata objects, not %q", arg, typ)
}
