package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Direction says which way tags and labels flow.
// +kubebuilder:validation:Enum=TwoWay;CloudToNode;NodeToCloud
type Direction string

const (
	// DirectionTwoWay syncs cloud tags to node labels and node labels to cloud tags.
	DirectionTwoWay Direction = "TwoWay"
	// DirectionCloudToNode only writes node labels from cloud tags.
	DirectionCloudToNode Direction = "CloudToNode"
	// DirectionNodeToCloud only writes cloud tags from node labels.
	DirectionNodeToCloud Direction = "NodeToCloud"
)

// ConflictPolicy says what happens when a tag and its label were both changed
// to different values since they last agreed.
// +kubebuilder:validation:Enum=Ignore;CloudWins;NodeWins
type ConflictPolicy string

const (
	// ConflictIgnore leaves both sides as they are and reports the conflict.
	ConflictIgnore ConflictPolicy = "Ignore"
	// ConflictCloudWins overwrites the label with the tag's value.
	ConflictCloudWins ConflictPolicy = "CloudWins"
	// ConflictNodeWins overwrites the tag with the label's value.
	ConflictNodeWins ConflictPolicy = "NodeWins"
)

// Target says which cloud resource carries a node's tags.
// +kubebuilder:validation:Enum=ScaleSet;Instance
type Target string

const (
	// TargetScaleSet syncs with the scale set a node belongs to (standalone
	// and availability-set VMs use their own tags). On AWS the Auto Scaling
	// group plays the scale set; instances in none (Karpenter's, standalone
	// ones) use their own tags.
	TargetScaleSet Target = "ScaleSet"
	// TargetInstance syncs with the node's own VM where the cloud allows
	// per-instance tags; Uniform scale-set instances fall back to the scale set.
	// On AWS every node syncs with its own EC2 instance.
	TargetInstance Target = "Instance"
)

// Provider names a cloud.
// +kubebuilder:validation:Enum=azure;aws
type Provider string

const (
	// ProviderAzure is Azure Resource Manager: nodes sync with their VMs or
	// scale sets.
	ProviderAzure Provider = "azure"
	// ProviderAWS is AWS: nodes sync with their EC2 instances or Auto
	// Scaling groups.
	ProviderAWS Provider = "aws"
)

// Default label prefixes, by provider (see NodeTagSyncSpec.LabelPrefix).
const (
	// AzureLabelPrefix is the label prefix of a NodeTagSync on Azure that
	// names none.
	AzureLabelPrefix = "azure.tags"
	// AWSLabelPrefix is the label prefix of a NodeTagSync on AWS that names
	// none.
	AWSLabelPrefix = "aws.tags"
)

// DefaultLabelPrefix is the label prefix of a NodeTagSync on p that names
// none: "aws.tags" on AWS, "azure.tags" on Azure and when p is empty (the
// provider's default).
func (p Provider) DefaultLabelPrefix() string {
	if p == ProviderAWS {
		return AWSLabelPrefix
	}
	return AzureLabelPrefix
}

// EffectiveLabelPrefix is the label prefix the spec syncs under:
// LabelPrefix when set ("" included: label key = tag name), else its
// provider's DefaultLabelPrefix.
func (s NodeTagSyncSpec) EffectiveLabelPrefix() string {
	if s.LabelPrefix != nil {
		return *s.LabelPrefix
	}
	return s.Provider.DefaultLabelPrefix()
}

// NodeTagSyncSpec configures two-way sync between cloud tags and node labels.
//
// Every field may change on a live object; none deletes
// a tag because of the change itself. The merge base stored on each Node
// records the NodeTagSync (UID), label prefix, direction and provider it was
// made under, and a base made under another of these is no base: the next
// pass merges as for a new Node (a union that deletes nothing). So a changed
// labelPrefix writes the labels under the new prefix from the cloud's tags
// and removes the old-prefix labels tagsync wrote (those still carrying the
// value it wrote); a changed direction or provider, a Node moving to
// another NodeTagSync (selector edits, or the oldest-wins rule after a
// restore) and a re-created NodeTagSync start from the union too.
// +kubebuilder:validation:XValidation:rule="!(has(self.syncTaints) && self.syncTaints && self.direction == 'CloudToNode')",message="syncTaints exports taints as tags, so it needs direction TwoWay or NodeToCloud"
type NodeTagSyncSpec struct {
	// Provider is the cloud that owns the nodes' resources: azure (VMs and
	// scale sets) or aws (EC2 instances and Auto Scaling groups).
	// +kubebuilder:default=azure
	// +optional
	Provider Provider `json:"provider,omitempty"`

	// Direction is which way tags and labels flow.
	// +kubebuilder:default=TwoWay
	// +optional
	Direction Direction `json:"direction,omitempty"`

	// LabelPrefix is the label key prefix under which cloud tags appear on
	// nodes: tag name=value becomes label <labelPrefix>/<name>=<value>. It must
	// be a lower-case DNS subdomain outside kubernetes.io and k8s.io. An empty
	// prefix is allowed: the label key is then the tag name itself. When
	// omitted it depends on the provider: azure.tags on Azure, aws.tags on
	// AWS (the controller resolves it; the API server stores no default, so
	// Azure objects created before AWS support keep the azure.tags they were
	// given, and new ones that omit it still sync under azure.tags).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="labelPrefix must be empty or a lower-case DNS subdomain such as azure.tags"
	// +kubebuilder:validation:XValidation:rule="!(self in ['kubernetes.io', 'k8s.io'] || self.endsWith('.kubernetes.io') || self.endsWith('.k8s.io'))",message="labelPrefix may not be under kubernetes.io or k8s.io: those label prefixes are reserved by Kubernetes"
	// +optional
	LabelPrefix *string `json:"labelPrefix,omitempty"`

	// ConflictPolicy decides what happens when a tag and its label both
	// changed to different values since they last agreed.
	// +kubebuilder:default=Ignore
	// +optional
	ConflictPolicy ConflictPolicy `json:"conflictPolicy,omitempty"`

	// Target is the resource whose tags are synced: the scale set (on AWS
	// the Auto Scaling group), or the node's own VM (EC2) instance.
	// +kubebuilder:default=ScaleSet
	// +optional
	Target Target `json:"target,omitempty"`

	// ResourceGroups limits the sync to nodes in these scopes. Empty means
	// all. On Azure they are resource groups (compared
	// case-insensitively); on AWS they are regions (such as us-east-1,
	// compared exactly).
	// +kubebuilder:validation:MaxItems=100
	// +listType=set
	// +optional
	ResourceGroups []ResourceGroupName `json:"resourceGroups,omitempty"`

	// NodeSelector limits the sync to nodes whose labels match. Empty means all.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// IncludeTags are glob patterns over tag names (such as cost* or env);
	// when set, only tags whose name matches one are synced. They compare
	// names as the provider does: ignoring case on Azure, exactly on AWS,
	// where tag keys are case-sensitive (Team and team are two tags, and
	// the pattern Team does not match team; a pattern that matches only
	// ignoring case is reported as a SpecWarning).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	IncludeTags []TagPattern `json:"includeTags,omitempty"`

	// ExcludeTags are glob patterns of tag names never synced, compared as
	// IncludeTags are (ignoring case on Azure, exactly on AWS). They win
	// over IncludeTags.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	ExcludeTags []TagPattern `json:"excludeTags,omitempty"`

	// IncludePlatformTags are glob patterns of platform tags to sync anyway.
	// Platform tags are the keys the platform writes on the nodes' cloud
	// resources and depends on: on AWS eks:*, kubernetes.io/cluster/*,
	// k8s.io/cluster-autoscaler/*, karpenter.sh/*, karpenter.k8s.aws/*,
	// alpha.eksctl.io/*, eksctl.*, aws-node-termination-handler/*,
	// sigs.k8s.io/cluster-api-provider-aws/*, KubernetesCluster and
	// kops.k8s.io/*; on Azure aks-managed-*. By default they are out of scope
	// on both sides: never written to the cloud, never deleted from it, never
	// made labels (labels that already exist for them are left alone).
	// Removing one can leak an instance or drop a group from its autoscaler,
	// so list only keys you mean tagsync to write and delete from labels
	// (such as karpenter.sh/nodepool). Matched as the provider compares tag
	// names (case-sensitively on AWS); IncludeTags and ExcludeTags still
	// apply, ExcludeTags winning.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	IncludePlatformTags []TagPattern `json:"includePlatformTags,omitempty"`

	// ResyncInterval is how often every node is compared with the cloud even
	// when nothing was observed to change. At least 30s.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="resyncInterval must be a duration such as 90s, 5m or 1h30m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) >= duration('30s')",message="resyncInterval must be at least 30s to stay within cloud API quotas"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) <= duration('24h')",message="resyncInterval must be at most 24h"
	// +optional
	ResyncInterval *metav1.Duration `json:"resyncInterval,omitempty"`

	// SyncTaints exports node taints as cloud tags, one way (node to cloud):
	// taint key example.com/gpu becomes tag "taint:example.com:gpu" ("taint:"
	// then the key with "/" as ":"), with value "<value>:<effect>" (several
	// effects on one key joined by ","). The pending taint
	// nodetags.tagsync.io/pending is never exported. Off by default.
	// +kubebuilder:default=false
	// +optional
	SyncTaints bool `json:"syncTaints,omitempty"`

	// Suspend stops every write while true: passes still read the cloud and
	// the Nodes and report what they would change (the Suspended
	// condition), but no tag, label, merge base or pending taint is
	// written. Setting it back to false resumes at once.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// DeletionPolicy is Delete (the default: a tag or label removed on one
	// side is removed on the other) or Retain (upsert-only: tags and labels
	// are created and updated but never deleted; what would have been
	// deleted is kept and reported in the DeletionsHeld condition).
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// ResourceGroupName is an Azure resource group name or, on AWS, a region
// name.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=90
// +kubebuilder:validation:Pattern=`^[-\w\._\(\)]+$`
type ResourceGroupName string

// TagPattern is a glob pattern over tag names: * matches any run of
// characters, / included, ? one character, [a-z] a class. It compares names
// as the provider compares tag names: ignoring case on Azure, exactly on
// AWS.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=512
type TagPattern string

// Condition types of a NodeTagSync.
const (
	// ConditionReady is true when the last full sync finished and every
	// in-scope node agrees with its cloud resource, conflicts aside.
	ConditionReady = "Ready"
	// ConditionDegraded is true when some nodes could not be synced.
	ConditionDegraded = "Degraded"
)

// NodeTagSyncStatus reports what the controller observed and did.
type NodeTagSyncStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, Degraded, Suspended and DeletionsHeld (and
	// Events when cloud change events are on).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// SyncedNodes counts in-scope nodes whose labels and tags agree.
	// +optional
	SyncedNodes int32 `json:"syncedNodes"`

	// UnmanagedNodes counts selected nodes this NodeTagSync does not sync:
	// on-prem, no providerID of the provider's cloud (or an AWS Fargate
	// node), outside the resourceGroups filter, or synced
	// by an older NodeTagSync that also selects them.
	// +optional
	UnmanagedNodes int32 `json:"unmanagedNodes"`

	// ConflictCount counts tag/label pairs currently in conflict.
	// +optional
	ConflictCount int32 `json:"conflictCount"`

	// ErrorCount counts nodes whose last sync failed.
	// +optional
	ErrorCount int32 `json:"errorCount"`

	// Conflicts lists current conflicts, at most 50.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	Conflicts []TagConflict `json:"conflicts,omitempty"`

	// Unrepresentable lists tags or labels that could not be carried to the
	// other side (too long, reserved, limit reached), at most 50.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	Unrepresentable []SkippedTag `json:"unrepresentable,omitempty"`

	// LastFullSyncTime is when every in-scope node was last compared.
	// +optional
	LastFullSyncTime *metav1.Time `json:"lastFullSyncTime,omitempty"`

	// DeletionsHeld is the mass deletion the last pass held back, waiting
	// for approval (see the DeletionsHeld condition); absent when none.
	// +optional
	DeletionsHeld *HeldDeletions `json:"deletionsHeld,omitempty"`

	// RetainedDeletions counts the deletions the last pass kept because the
	// deletionPolicy is Retain.
	// +optional
	RetainedDeletions int32 `json:"retainedDeletions,omitempty"`

	// LastSyncRequest is the value of the tagsync.io/sync-requested
	// annotation when the pass this status describes ran: once it equals the
	// value you set, a pass with fresh cloud reads has served your request.
	// +optional
	LastSyncRequest string `json:"lastSyncRequest,omitempty"`

	// RecentWrites are the deletions (and restores) of the last hour's
	// passes, which later passes judge by; a new leader starts from them.
	// +optional
	RecentWrites *RecentWrites `json:"recentWrites,omitempty"`
}

// TagConflict is a tag whose cloud value and label value disagree.
type TagConflict struct {
	// Resource is the ARM ID of the resource carrying the tag.
	Resource string `json:"resource"`
	// Nodes are the nodes involved (for scale sets, the disagreeing nodes).
	// +listType=atomic
	Nodes []string `json:"nodes"`
	// Tag is the tag name.
	Tag string `json:"tag"`
	// CloudValue is the tag's value in the cloud; absent when deleted there.
	// +optional
	CloudValue *string `json:"cloudValue,omitempty"`
	// NodeValues are the label values on the nodes, in the order of Nodes;
	// absent when the label was deleted.
	// +listType=atomic
	// +optional
	NodeValues []string `json:"nodeValues,omitempty"`
}

// SkippedTag is a tag or label that could not be synced.
type SkippedTag struct {
	// Object is the node name or resource ID where it was found.
	Object string `json:"object"`
	// Name is the tag name or label key.
	Name string `json:"name"`
	// Reason says why, and what to do about it.
	Reason string `json:"reason"`
}

// NodeTagSync keeps cloud VM / scale-set tags and node labels in agreement.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nts,categories=tagsync
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="Direction",type=string,JSONPath=`.spec.direction`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Synced",type=integer,JSONPath=`.status.syncedNodes`
// +kubebuilder:printcolumn:name="Conflicts",type=integer,JSONPath=`.status.conflictCount`
// +kubebuilder:printcolumn:name="Errors",type=integer,JSONPath=`.status.errorCount`
// +kubebuilder:printcolumn:name="Last Sync",type=date,JSONPath=`.status.lastFullSyncTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeTagSync struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired sync.
	Spec NodeTagSyncSpec `json:"spec,omitempty"`
	// Status is what the controller observed.
	// +optional
	Status NodeTagSyncStatus `json:"status,omitempty"`
}

// NodeTagSyncList is a list of NodeTagSync.
//
// +kubebuilder:object:root=true
type NodeTagSyncList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the NodeTagSyncs.
	Items []NodeTagSync `json:"items"`
}
