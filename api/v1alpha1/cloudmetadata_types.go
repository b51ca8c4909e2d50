package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// LimitPolicy says what happens on a resource that cannot take every tag a
// request asks for, such as one that would exceed its cloud's tag limit.
// +kubebuilder:validation:Enum=POLICY_APPLY_PARTIAL;POLICY_APPLY_STRICT
type LimitPolicy string

const (
	// LimitPartial adds the new tags that fit (in name order) and reports the
	// others as failures of that resource.
	LimitPartial LimitPolicy = "POLICY_APPLY_PARTIAL"
	// LimitStrict writes nothing on a resource unless every new tag fits, and
	// reports the resource as failed.
	LimitStrict LimitPolicy = "POLICY_APPLY_STRICT"
)

const (
	// DefaultSyncEvery is the default of ControllerConfig.SyncEvery.
	DefaultSyncEvery = "10m"
	// DefaultSyncInterval is DefaultSyncEvery as a duration.
	DefaultSyncInterval = 10 * time.Minute
	// MinSyncInterval is the shortest ControllerConfig.SyncEvery accepted.
	MinSyncInterval = time.Minute
	// MaxSyncInterval is the longest ControllerConfig.SyncEvery accepted.
	MaxSyncInterval = 24 * time.Hour
)

// CloudMetadataSpec says which cloud resources are in scope and which
// requests (AzureMetadata, AWSMetadata) apply tags to them.
type CloudMetadataSpec struct {
	// Classifiers select the cloud resources in scope by their tags: a
	// resource is in scope when it carries any one of these tags with exactly
	// that value (the classifiers are OR-ed). Names and values match exactly:
	// there are no wildcards. At least 1 and at most 10; names are 1 to 512
	// characters long and values at most 256, so a classifier can name a tag
	// of any cloud (Azure tag names may not contain "/": write
	// kubernetes.io_cluster.demo=owned rather than
	// kubernetes.io/cluster/demo=owned there).
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=10
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1 && size(k) <= 512)",message="classifier tag names must be 1 to 512 characters long"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 256)",message="classifier tag values must be at most 256 characters long"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.contains('*') && !self[k].contains('*'))",message="classifiers match a tag name and value exactly: wildcards such as * are not supported"
	// +required
	Classifiers map[string]string `json:"classifiers"`

	// ControllerConfig tunes how the controller applies the requests.
	// +kubebuilder:default={}
	// +optional
	ControllerConfig ControllerConfig `json:"controllerConfig,omitempty"`

	// CloudProvider names the requests to apply, one per cloud. A cloud
	// without a reference is left alone; with no reference at all, nothing
	// happens.
	// +optional
	CloudProvider CloudProviderRefs `json:"cloudProvider,omitempty"`

	// Suspend stops every cloud write made for this CloudMetadata while
	// true: its passes still discover the resources, plan and report (the
	// counts, and how many resources a pass would write), but send no tag
	// write and record no tag as written. The Suspended condition is true
	// and Ready says so. Clearing it resumes at once.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// DeletionPolicy says whether the delete opcodes of the requests this
	// CloudMetadata applies delete cloud tags: Delete (the default) does;
	// Retain is upsert-only: tags are added and updated, never deleted, and
	// what a delete opcode would have deleted is kept and reported (the
	// DeletionsHeld condition with reason Retained, status.retainedDeletions
	// and an event).
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// Deletes reports whether the CloudMetadata's requests may delete cloud
// tags (DeletionPolicy is not Retain).
func (s CloudMetadataSpec) Deletes() bool { return s.DeletionPolicy != DeletionPolicyRetain }

// ControllerConfig tunes how the controller applies a CloudMetadata's
// requests.
type ControllerConfig struct {
	// Limit says what happens on a resource that cannot take every requested
	// tag (such as one at its cloud's tag limit): POLICY_APPLY_PARTIAL writes
	// the tags that fit and reports the rest, POLICY_APPLY_STRICT writes none
	// of them on that resource.
	// +kubebuilder:default=POLICY_APPLY_PARTIAL
	// +optional
	Limit LimitPolicy `json:"limit,omitempty"`

	// SyncEvery is how often every resource in scope is compared with the
	// requests even when nothing was observed to change: a duration such as
	// 10m or 1h30m, at least 1m and at most 24h.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="syncEvery must be a duration such as 90s, 10m or 1h30m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) >= duration('1m')",message="syncEvery must be at least 1m to stay within cloud API quotas"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) <= duration('24h')",message="syncEvery must be at most 24h"
	// +optional
	SyncEvery string `json:"syncEvery,omitempty"`
}

// SyncInterval returns SyncEvery as a duration: DefaultSyncInterval when
// SyncEvery is empty, not a duration, or outside MinSyncInterval to
// MaxSyncInterval (which admission refuses, so only an object written
// around it has one).
func (s ControllerConfig) SyncInterval() time.Duration {
	d, err := time.ParseDuration(s.SyncEvery)
	if err != nil || d < MinSyncInterval || d > MaxSyncInterval {
		return DefaultSyncInterval
	}
	return d
}

// CloudProviderRefs names the request of each cloud. The requests are in the
// CloudMetadata's own namespace: there is deliberately no namespace field, so
// the editors of one namespace cannot steer the tags another namespace's
// objects ask for.
type CloudProviderRefs struct {
	// AzureRef names the AzureMetadata to apply to the Azure resources in
	// scope. Absent: Azure resources are left alone.
	// +optional
	AzureRef *LocalObjectRef `json:"azureRef,omitempty"`

	// AWSRef names the AWSMetadata to apply to the AWS resources in scope.
	// Absent: AWS resources are left alone.
	// +optional
	AWSRef *LocalObjectRef `json:"awsRef,omitempty"`
}

// LocalObjectRef names an object in the referring object's namespace.
type LocalObjectRef struct {
	// Name is the object's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="name must be an object name: a lower-case DNS subdomain such as azure-tags"
	// +required
	Name string `json:"name"`
}

// CloudMetadataStatus reports what the controller observed and did, over
// every cloud.
type CloudMetadataStatus struct {
	// Conditions are Ready, Suspended, DeletionsHeld (and Events when
	// cloud change events are on).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastSyncTime is when every resource in scope was last compared with
	// the requests.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// Matched counts the resources carrying a classifier, in all clouds.
	// +optional
	Matched int32 `json:"matched"`

	// InSync counts the matched resources that carry what the requests ask.
	// +optional
	InSync int32 `json:"inSync"`

	// Failed counts the matched resources whose last write failed.
	// +optional
	Failed int32 `json:"failed"`

	// LastSyncRequest is the value of the tagsync.io/sync-requested
	// annotation when the pass this status describes ran: once it equals the
	// value you set, a pass with fresh cloud reads has served your request.
	// +optional
	LastSyncRequest string `json:"lastSyncRequest,omitempty"`

	// DeletionsHeld is the mass deletion the last pass held back for a
	// person's approval (see the DeletionsHeld condition); absent when none
	// is held.
	// +optional
	DeletionsHeld *HeldDeletions `json:"deletionsHeld,omitempty"`

	// RecentWrites are the deletions (and restores) of the last hour's
	// passes, which later passes judge by; a new leader starts from them.
	// +optional
	RecentWrites *RecentWrites `json:"recentWrites,omitempty"`

	// RetainedDeletions counts the tag deletions the last pass kept because
	// DeletionPolicy is Retain.
	// +optional
	RetainedDeletions int32 `json:"retainedDeletions,omitempty"`
}

// CloudMetadata selects cloud resources by classifier tags and applies the
// tag requests of an AzureMetadata and an AWSMetadata of its namespace to
// them. Its Ready condition (ConditionReady) is true when the last sync
// finished and every matched resource carries what the requests ask.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=cloudmeta,categories=tagsync
// +kubebuilder:printcolumn:name="Azure",type=string,JSONPath=`.spec.cloudProvider.azureRef.name`
// +kubebuilder:printcolumn:name="AWS",type=string,JSONPath=`.spec.cloudProvider.awsRef.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matched`
// +kubebuilder:printcolumn:name="InSync",type=integer,JSONPath=`.status.inSync`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Last Sync",type=date,JSONPath=`.status.lastSyncTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CloudMetadata struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the scope and the requests to apply.
	// +required
	Spec CloudMetadataSpec `json:"spec"`
	// Status is what the controller observed.
	// +optional
	Status CloudMetadataStatus `json:"status,omitempty"`
}

// CloudMetadataList is a list of CloudMetadata.
//
// +kubebuilder:object:root=true
type CloudMetadataList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the CloudMetadata objects.
	Items []CloudMetadata `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &CloudMetadata{}, &CloudMetadataList{})
		return nil
	})
}
