package v1alpha1

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Opcode says what a request does with its tags.
// +kubebuilder:validation:Enum=add;update;delete
type Opcode string

const (
	// OpcodeAdd adds the tags to the matched resources that lack them; a tag
	// a resource already carries with another value keeps it (reported as a
	// failure), unless this object wrote the tag there.
	OpcodeAdd Opcode = "add"
	// OpcodeUpdate sets the tags to the requested values on the matched
	// resources, adding missing tags and overwriting other values.
	OpcodeUpdate Opcode = "update"
	// OpcodeDelete removes the tags from the matched resources: a tag with a
	// value in the request only where it carries that value, a tag with an
	// empty value whatever its value.
	OpcodeDelete Opcode = "delete"
)

// Condition types of an AzureMetadata or AWSMetadata. Both also report
// ConditionReady, as every tagsync kind does: True when the request is
// carried out on every matched resource, else False with the reason and
// message of the condition that says why (Approved or Request False,
// AuditFailing, Suspended or Conflict True, Applied False).
const (
	// ConditionApproved is true when the request passes the cloud's tag
	// rules (names, values, names the cloud takes as one); false, nothing of
	// it is applied and the message lists every problem.
	ConditionApproved = "Approved"
	// ConditionApplied is true when every matched resource carries what the
	// request asks.
	ConditionApplied = "Applied"
	// ConditionPolicy reports what the CloudMetadata's limit policy did:
	// false when tags were left out (POLICY_APPLY_PARTIAL) or resources left
	// alone (POLICY_APPLY_STRICT) because they did not fit.
	ConditionPolicy = "Policy"
	// ConditionRequest is false when the last pass could not carry the
	// request out, wholly or in part, for a reason outside the spec: the
	// cloud is not configured in tagsync, discovery failed or was throttled,
	// a subscription or region could not be searched, or the CloudMetadata
	// that applies it has a broken reference.
	ConditionRequest = "Request"
)

// MaxFailures is the most resources ProviderMetadataStatus.Failures lists;
// MoreFailures counts the others.
const MaxFailures = 20

// AzureMetadataSpec is a tag request for Azure resources: what to do with
// which tags, which tags to leave alone, and where to look.
// +kubebuilder:validation:XValidation:rule="!has(self.resourceTags) || !has(self.ignoreTags) || !self.ignoreTags.exists(i, self.resourceTags.exists(k, k.lowerAscii() == i.lowerAscii()))",message="a tag may not be both in resourceTags and ignoreTags: ignored tags are never written",messageExpression="'tag \"' + self.ignoreTags.filter(i, self.resourceTags.exists(k, k.lowerAscii() == i.lowerAscii()))[0] + '\" is both in resourceTags and ignoreTags (Azure tag names ignore case): ignored tags are never written, so remove it from one of them'"
type AzureMetadataSpec struct {
	// Opcode is what to do with ResourceTags: add, update or delete.
	// +required
	Opcode Opcode `json:"opcode"`

	// ResourceTags are the tags to add, update or delete, at most 50. With
	// delete, an empty value means whatever value the tag has. Names are 1 to
	// 512 characters long, may not contain < > % & \ ? / or ; and may not
	// start with microsoft, azure or windows (in any case: Azure reserves
	// them); values are at most 256 characters long.
	// +kubebuilder:validation:MaxProperties=50
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1)",message="tag names may not be empty"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 512)",message="Azure tag names must be at most 512 characters long"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 256)",message="Azure tag values must be at most 256 characters long"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.matches('[<>%&?/;]') && !k.contains('\\\\'))",message="Azure tag names may not contain any of < > % & \\ ? / ;",messageExpression="'tag name \"' + self.filter(k, k.matches('[<>%&?/;]') || k.contains('\\\\'))[0] + '\": Azure tag names may not contain any of < > % & \\\\ ? / ;'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.lowerAscii().startsWith('microsoft') && !k.lowerAscii().startsWith('azure') && !k.lowerAscii().startsWith('windows'))",message="Azure reserves tag names starting with microsoft, azure or windows (in any case)",messageExpression="'tag name \"' + self.filter(k, k.lowerAscii().startsWith('microsoft') || k.lowerAscii().startsWith('azure') || k.lowerAscii().startsWith('windows'))[0] + '\": Azure reserves tag names starting with microsoft, azure or windows (in any case)'"
	// +optional
	ResourceTags map[string]string `json:"resourceTags,omitempty"`

	// IgnoreTags are tag names (compared ignoring case, as Azure does) that
	// are never read into decisions nor written, at most 50.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=set
	// +optional
	IgnoreTags []string `json:"ignoreTags,omitempty"`

	// Subscriptions are the IDs of the Azure subscriptions to search, at most
	// 20. Empty means the controller's default subscription.
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=36
	// +kubebuilder:validation:XValidation:rule="self.all(s, s.matches('^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'))",message="subscriptions must be Azure subscription IDs: GUIDs such as 00000000-1111-2222-3333-444444444444"
	// +listType=set
	// +optional
	Subscriptions []string `json:"subscriptions,omitempty"`

	// ResourceGroups adds to the CloudMetadata's scope, whatever their tags,
	// the resources of these resource groups whose names start with a
	// prefix, at most 10: clusters installed by releases that tagged only
	// their resource group are found this way (the OpenShift adapter sets
	// it). Searched in Subscriptions.
	// +kubebuilder:validation:MaxItems=10
	// +optional
	ResourceGroups []ResourceGroupScope `json:"resourceGroups,omitempty"`

	// Suspend stops the cloud writes made for this request while true: the
	// CloudMetadata that applies it still discovers and plans its tags and
	// reports them (the Suspended condition says how many resources a pass
	// would write), but writes none of them. Clearing it resumes at once.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ResourceGroupScope is the resources of a resource group whose names start
// with NamePrefix.
type ResourceGroupScope struct {
	// Name is the resource group's name (compared ignoring case).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	// +kubebuilder:validation:Pattern=`^[-\w\._\(\)]+$`
	// +required
	Name string `json:"name"`
	// NamePrefix is the start of the resource names (compared ignoring
	// case), e.g. a cluster's infrastructure name; at least 3 characters,
	// so that a typo cannot take a whole group.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=80
	// +required
	NamePrefix string `json:"namePrefix"`
}

// AWSMetadataSpec is a tag request for AWS resources: what to do with which
// tags, which tags to leave alone, and where to look. Its deep-copy methods
// are written by hand (below): controller-gen cannot copy a map whose values
// are an alias such as AWSTagValue.
// +kubebuilder:object:generate=false
// +kubebuilder:validation:XValidation:rule="!has(self.resourceTags) || !has(self.ignoreTags) || !self.ignoreTags.exists(k, k in self.resourceTags)",message="a tag may not be both in resourceTags and ignoreTags: ignored tags are never written",messageExpression="'tag \"' + self.ignoreTags.filter(k, k in self.resourceTags)[0] + '\" is both in resourceTags and ignoreTags: ignored tags are never written, so remove it from one of them'"
type AWSMetadataSpec struct {
	// Opcode is what to do with ResourceTags: add, update or delete.
	// +required
	Opcode Opcode `json:"opcode"`

	// ResourceTags are the tags to add, update or delete, at most 50. With
	// delete, an empty value means whatever value the tag has. Keys are 1 to
	// 128 characters long and may not start with aws: (in any case: AWS
	// reserves it); values are at most 256 characters long; both are made of
	// letters, digits, spaces and + - = . _ : / @ only.
	// +kubebuilder:validation:MaxProperties=50
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1)",message="tag keys may not be empty"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 128)",message="AWS tag keys must be at most 128 characters long"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[\\\\p{L}\\\\p{Z}\\\\p{N}_.:/=+@-]*$') && self[k].matches('^[\\\\p{L}\\\\p{Z}\\\\p{N}_.:/=+@-]*$'))",message="AWS tag keys and values may only contain letters, digits, spaces and + - = . _ : / @",messageExpression="'tag \"' + self.filter(k, !k.matches('^[\\\\p{L}\\\\p{Z}\\\\p{N}_.:/=+@-]*$') || !self[k].matches('^[\\\\p{L}\\\\p{Z}\\\\p{N}_.:/=+@-]*$'))[0] + '\": AWS tag keys and values may only contain letters, digits, spaces and + - = . _ : / @'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.lowerAscii().startsWith('aws:'))",message="AWS reserves tag keys starting with aws: (in any case)",messageExpression="'tag key \"' + self.filter(k, k.lowerAscii().startsWith('aws:'))[0] + '\": AWS reserves tag keys starting with aws: (in any case)'"
	// +optional
	ResourceTags map[string]AWSTagValue `json:"resourceTags,omitempty"`

	// IgnoreTags are tag keys (case-sensitive, as AWS compares them) that are
	// never read into decisions nor written, at most 50.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +listType=set
	// +optional
	IgnoreTags []string `json:"ignoreTags,omitempty"`

	// Regions are the AWS regions to search, such as us-east-1, at most 20.
	// Empty means the controller's configured region.
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.matches('^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+$'))",message="regions must be AWS region codes such as us-east-1, eu-central-2 or us-gov-west-1"
	// +listType=set
	// +optional
	Regions []string `json:"regions,omitempty"`

	// Suspend stops the cloud writes made for this request while true: the
	// CloudMetadata that applies it still discovers and plans its tags and
	// reports them (the Suspended condition says how many resources a pass
	// would write), but writes none of them. Clearing it resumes at once.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// DeepCopyInto copies the receiver into out; in must be non-nil.
func (in *AWSMetadataSpec) DeepCopyInto(out *AWSMetadataSpec) {
	*out = *in
	out.ResourceTags = maps.Clone(in.ResourceTags)
	out.IgnoreTags = slices.Clone(in.IgnoreTags)
	out.Regions = slices.Clone(in.Regions)
}

// DeepCopy returns a deep copy of the receiver, or nil for nil.
func (in *AWSMetadataSpec) DeepCopy() *AWSMetadataSpec {
	if in == nil {
		return nil
	}
	out := new(AWSMetadataSpec)
	in.DeepCopyInto(out)
	return out
}

// AWSTagValue carries the schema's length bound on AWS tag values: without
// it, the API server takes a value to be as long as a whole request and the
// charset rule on values exceeds its cost budget for validation rules. It is
// an alias, so AWSMetadataSpec.ResourceTags is a map[string]string in Go.

// AWSTagValue is an AWS tag value: at most 256 characters long.
// +kubebuilder:validation:MaxLength=256
type AWSTagValue = string

// ProviderMetadataStatus reports what the controller observed and did with
// an AzureMetadata's or AWSMetadata's request.
type ProviderMetadataStatus struct {
	// Conditions are Ready, Approved, Applied, Policy, Request, Suspended,
	// Conflict (while applied: other objects want other values for its
	// tags) and AuditFailing (once the audit log failed to take a record).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ResourceTags is the active tag list: the tags this object owns and
	// keeps reconciled on the matched resources.
	// +optional
	ResourceTags map[string]string `json:"resourceTags,omitempty"`

	// LastSyncTime is when every matched resource was last compared with the
	// request.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// Matched counts the resources of this cloud carrying a classifier of
	// the CloudMetadata, in the subscriptions or regions searched.
	// +optional
	Matched int32 `json:"matched"`

	// InSync counts the matched resources that carry what the request asks.
	// +optional
	InSync int32 `json:"inSync"`

	// Failed counts the matched resources whose last write failed.
	// +optional
	Failed int32 `json:"failed"`

	// Failures lists failed resources, at most MaxFailures (20).
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	Failures []ResourceFailure `json:"failures,omitempty"`

	// MoreFailures counts the failed resources left out of Failures.
	// +optional
	MoreFailures int32 `json:"moreFailures,omitempty"`

	// CloudMetadata is the name of the CloudMetadata (in the same namespace)
	// that drives this object; empty when none references it.
	// +optional
	CloudMetadata string `json:"cloudMetadata,omitempty"`

	// Held records, under opcode add, which requested tags this object
	// holds on which resources (written there by it, or found there with
	// its value): only those are rewritten after an outside edit. The
	// controller keeps it here so that a restart forgets nothing it owns.
	// One entry per distinct set of names, at most 64.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Held []HeldTags `json:"held,omitempty"`
}

// HeldTags is a set of tag names held on a set of resources, the resources
// recorded compactly as digests of their IDs.
type HeldTags struct {
	// Names are the tag names held, sorted.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	Names []string `json:"names"`
	// Resources counts the resources that hold exactly these names.
	Resources int32 `json:"resources"`
	// Digests are the resources: the first 6 bytes of the SHA-256 of each
	// resource's canonical ID, sorted, concatenated and base64-encoded
	// (8 characters per resource).
	Digests string `json:"digests"`
}

// ResourceFailure is a resource the request could not be applied to.
type ResourceFailure struct {
	// Resource is the cloud resource's ID (an ARM ID or an ARN).
	Resource string `json:"resource"`
	// Tags are the names of the tags concerned.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	Tags []string `json:"tags,omitempty"`
	// Reason is a CamelCase word for machines, such as TagLimitExceeded.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Reason string `json:"reason"`
	// Message says what went wrong, for people.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// AzureMetadata is a tag request for the Azure resources a CloudMetadata of
// the same namespace selects (through spec.cloudProvider.azureRef).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=azmeta,categories=tagsync
// +kubebuilder:printcolumn:name="CloudMetadata",type=string,JSONPath=`.status.cloudMetadata`
// +kubebuilder:printcolumn:name="Opcode",type=string,JSONPath=`.spec.opcode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Approved",type=string,JSONPath=`.status.conditions[?(@.type=="Approved")].status`,priority=1
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`,priority=1
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matched`
// +kubebuilder:printcolumn:name="InSync",type=integer,JSONPath=`.status.inSync`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Last Sync",type=date,JSONPath=`.status.lastSyncTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AzureMetadata struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the request.
	// +required
	Spec AzureMetadataSpec `json:"spec"`
	// Status is what the controller observed and did.
	// +optional
	Status ProviderMetadataStatus `json:"status,omitempty"`
}

// AzureMetadataList is a list of AzureMetadata.
//
// +kubebuilder:object:root=true
type AzureMetadataList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the AzureMetadata objects.
	Items []AzureMetadata `json:"items"`
}

// AWSMetadata is a tag request for the AWS resources a CloudMetadata of the
// same namespace selects (through spec.cloudProvider.awsRef).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=awsmeta,categories=tagsync
// +kubebuilder:printcolumn:name="CloudMetadata",type=string,JSONPath=`.status.cloudMetadata`
// +kubebuilder:printcolumn:name="Opcode",type=string,JSONPath=`.spec.opcode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Approved",type=string,JSONPath=`.status.conditions[?(@.type=="Approved")].status`,priority=1
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`,priority=1
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matched`
// +kubebuilder:printcolumn:name="InSync",type=integer,JSONPath=`.status.inSync`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Last Sync",type=date,JSONPath=`.status.lastSyncTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AWSMetadata struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the request.
	// +required
	Spec AWSMetadataSpec `json:"spec"`
	// Status is what the controller observed and did.
	// +optional
	Status ProviderMetadataStatus `json:"status,omitempty"`
}

// AWSMetadataList is a list of AWSMetadata.
//
// +kubebuilder:object:root=true
type AWSMetadataList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the AWSMetadata objects.
	Items []AWSMetadata `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &AzureMetadata{}, &AzureMetadataList{}, &AWSMetadata{}, &AWSMetadataList{})
		return nil
	})
}
