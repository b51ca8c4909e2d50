package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	// DefaultLabelResync is the default of LabelSyncProfileSpec.ResyncInterval.
	DefaultLabelResync = time.Minute
	// MinLabelResync is the shortest LabelSyncProfileSpec.ResyncInterval
	// accepted.
	MinLabelResync = 10 * time.Second
	// MaxLabelResync is the longest LabelSyncProfileSpec.ResyncInterval
	// accepted.
	MaxLabelResync = 24 * time.Hour
	// MaxHostProblems is the most hosts LabelSyncProfileStatus.Problems
	// lists; MoreProblems counts the others.
	MaxHostProblems = 20
	// MaxWaitingExamples is the most host names a WaitingHosts entry lists.
	MaxWaitingExamples = 5
)

// ReservedLabelPrefixes are the label prefixes a LabelSyncProfile may not
// own: Kubernetes and the kubelet write the labels under them (other
// subdomains of kubernetes.io, such as my-prefix.kubernetes.io, are allowed).
var ReservedLabelPrefixes = []string{"kubernetes.io", "k8s.io", "kubelet.kubernetes.io", "beta.kubernetes.io"}

// LabelSyncProfileSpec says which BareMetalHosts of the profile's namespace
// own which labels on the Nodes that run on them.
type LabelSyncProfileSpec struct {
	// HostSelector selects the BareMetalHosts (metal3.io) of the profile's
	// namespace whose labels are synced; {} selects all of them.
	// +required
	HostSelector metav1.LabelSelector `json:"hostSelector"`

	// Prefixes are the label prefixes the hosts own: a label is in scope
	// when the part of its key before the first "/" equals one of them
	// exactly (rack.example.com owns rack.example.com/row but not
	// a.rack.example.com/row). On the Node, in-scope labels are kept exactly
	// as on the host: added, changed and removed with it, and an edit made
	// on the Node is reverted. Labels outside the prefixes are never
	// touched, and removing a prefix here leaves its labels where they are.
	// Each is a lower-case DNS subdomain; kubernetes.io, k8s.io,
	// kubelet.kubernetes.io and beta.kubernetes.io are reserved (other
	// subdomains of kubernetes.io are allowed). At least 1, at most 20.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))",message="prefixes must be lower-case DNS subdomains such as rack.example.com: the part of a label key before the /, without the /",messageExpression="'prefix \"' + self.filter(p, !p.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))[0] + '\": prefixes must be lower-case DNS subdomains such as rack.example.com (the part of a label key before the /, without the /)'"
	// +kubebuilder:validation:XValidation:rule="!self.exists(p, p in ['kubernetes.io', 'k8s.io', 'kubelet.kubernetes.io', 'beta.kubernetes.io'])",message="the prefixes kubernetes.io, k8s.io, kubelet.kubernetes.io and beta.kubernetes.io are reserved: Kubernetes and the kubelet own the Node labels under them",messageExpression="'prefix \"' + self.filter(p, p in ['kubernetes.io', 'k8s.io', 'kubelet.kubernetes.io', 'beta.kubernetes.io'])[0] + '\" is reserved: Kubernetes and the kubelet own the Node labels under kubernetes.io, k8s.io, kubelet.kubernetes.io and beta.kubernetes.io, so tagsync may not set or remove them; use a prefix of your own, such as rack.example.com or my-prefix.kubernetes.io'"
	// +listType=set
	// +required
	Prefixes []string `json:"prefixes"`

	// ResyncInterval is how often every selected host is compared with its
	// Node even when nothing was observed to change (Node edits are seen at
	// once through a watch; this is the safety net). At least 10s, at most
	// 24h.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="resyncInterval must be a duration such as 30s, 5m or 1h30m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) >= duration('10s')",message="resyncInterval must be at least 10s: Node edits are reverted through a watch, the resync is only a safety net"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) <= duration('24h')",message="resyncInterval must be at most 24h"
	// +optional
	ResyncInterval *metav1.Duration `json:"resyncInterval,omitempty"`

	// Suspend, when true, makes the profile's passes read the hosts and
	// Nodes and report what they would change (status.pending, the
	// Suspended condition) without writing anything: no Node label is set
	// or removed and the pending taint stays. Setting it back to false (or
	// removing it) is a spec change: a pass runs at once and writes what
	// is due. Default false.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// DeletionPolicy says whether the profile removes labels from Nodes.
	// Delete (the default): an in-scope label removed from the host, or
	// added on the Node without being on the host, is removed from the
	// Node. Retain: upsert-only, labels are added and updated but never
	// removed; what is kept is counted in status.labelsRetained and named
	// by the DeletionsHeld condition (reason Retained) and a Retained
	// event. Changing it to Delete makes the next pass (at once: it is a
	// spec change) remove the labels kept so far.
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// Retains reports an upsert-only profile (deletionPolicy Retain): it never
// removes a label from a Node.
func (s LabelSyncProfileSpec) Retains() bool { return s.DeletionPolicy == DeletionPolicyRetain }

// Resync returns ResyncInterval: DefaultLabelResync when it is unset or
// outside MinLabelResync to MaxLabelResync (which admission refuses, so
// only an object written around it has one).
func (s LabelSyncProfileSpec) Resync() time.Duration {
	if s.ResyncInterval == nil || s.ResyncInterval.Duration < MinLabelResync || s.ResyncInterval.Duration > MaxLabelResync {
		return DefaultLabelResync
	}
	return s.ResyncInterval.Duration
}

// WaitReason says what a host waits for before its Node can be synced.
// +kubebuilder:validation:Enum=NoConsumer;NoMachine;NoNodeRef;ClusterUnreachable
type WaitReason string

const (
	// WaitNoConsumer: the host has no spec.consumerRef to a Metal3Machine
	// (it is free, or being provisioned).
	WaitNoConsumer WaitReason = "NoConsumer"
	// WaitNoMachine: its Metal3Machine does not exist yet or has no owner
	// Machine.
	WaitNoMachine WaitReason = "NoMachine"
	// WaitNoNodeRef: the Machine has no status.nodeRef yet (its Node has not
	// joined), or the Node it names does not exist (yet).
	WaitNoNodeRef WaitReason = "NoNodeRef"
	// WaitClusterUnreachable: the workload cluster could not be reached (no
	// or a bad <cluster>-kubeconfig Secret, or its API server does not
	// answer); it is retried with backoff.
	WaitClusterUnreachable WaitReason = "ClusterUnreachable"
)

// WaitingHosts counts the hosts waiting for one reason.
type WaitingHosts struct {
	// Reason is what they wait for.
	// +required
	Reason WaitReason `json:"reason"`
	// Count is how many hosts wait for it.
	// +required
	Count int32 `json:"count"`
	// Hosts names the first of them, at most MaxWaitingExamples (5).
	// +kubebuilder:validation:MaxItems=5
	// +listType=atomic
	// +optional
	Hosts []string `json:"hosts,omitempty"`
}

// HostProblem is a host whose Node could not be synced.
type HostProblem struct {
	// Host is the BareMetalHost's name.
	// +required
	Host string `json:"host"`
	// Cluster is the workload cluster (namespace/name of the CAPI Cluster),
	// when known.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// Node is the Node's name, when known.
	// +optional
	Node string `json:"node,omitempty"`
	// Reason is a CamelCase word for machines: ClusterUnreachable,
	// NodeWriteFailed, NodeReadFailed, ContestedKeys (another host of the
	// Node wants other values for some keys) or LinkRefused (the host's
	// chain leaves its namespace, or its Metal3Machine names another host).
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	// +required
	Reason string `json:"reason"`
	// Message says what went wrong and what to do, for people.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// LabelSyncProfileStatus reports what the controller observed and did.
type LabelSyncProfileStatus struct {
	// Conditions are Ready: true when every selected host that has a Node
	// and is not paused has its labels in place on that Node, and no
	// workload cluster was unreachable; and Conflict: true while hosts of
	// the profile share a Node with another host (of this or another
	// source) that wants other values for keys both own, which neither
	// then writes (reason ContestedKeys; NoConflict when false);
	// Suspended: true while spec.suspend is set (then Ready is false,
	// reason Suspended, while a Node differs from its host); and
	// DeletionsHeld: true (reason Retained) while deletionPolicy Retain
	// keeps labels the sync would have removed, or (reason MassDeletion)
	// while label removals wait for approval, NoneHeld when false.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// HostsMatched counts the BareMetalHosts the selector matches.
	// +optional
	HostsMatched int32 `json:"hostsMatched"`

	// NodesInSync counts the matched hosts whose Node carries exactly the
	// host's in-scope labels (with deletionPolicy Retain: carries them,
	// the labels kept besides); a host with contested keys is not counted,
	// nor, while the profile is suspended, a host whose Node differs.
	// +optional
	NodesInSync int32 `json:"nodesInSync"`

	// HostsPaused counts the matched hosts skipped because the host
	// (annotation baremetalhost.metal3.io/paused) or its CAPI Cluster or
	// Machine is paused.
	// +optional
	HostsPaused int32 `json:"hostsPaused,omitempty"`

	// HostsWaiting counts the matched hosts that have no Node to sync yet,
	// or whose cluster is unreachable; Waiting says what they wait for.
	// +optional
	HostsWaiting int32 `json:"hostsWaiting"`

	// Waiting counts the waiting hosts by reason, with a few of their
	// names.
	// +kubebuilder:validation:MaxItems=4
	// +listType=map
	// +listMapKey=reason
	// +optional
	Waiting []WaitingHosts `json:"waiting,omitempty"`

	// Problems lists hosts whose Node could not be synced, at most
	// MaxHostProblems (20).
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	Problems []HostProblem `json:"problems,omitempty"`

	// MoreProblems counts the hosts with problems left out of Problems.
	// +optional
	MoreProblems int32 `json:"moreProblems,omitempty"`

	// LastSyncTime is when every matched host was last compared with its
	// Node: rewritten when the status changes, else once per resync
	// interval, and never older than the interval when the next pass comes
	// (also while a cluster is unreachable).
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// LabelsRetained counts the Node labels the last pass kept because
	// deletionPolicy is Retain: in-scope labels it would otherwise have
	// removed (gone from the host, or added on the Node only). 0 with
	// deletionPolicy Delete.
	// +optional
	LabelsRetained int32 `json:"labelsRetained,omitempty"`

	// DeletionsHeld is the set of label removals the last pass held back
	// for a person's approval (the DeletionsHeld condition, reason
	// MassDeletion): labels under a prefix new to the sync, which it never
	// wrote, or one label removed from many Nodes at once. Unset when
	// nothing is held.
	// +optional
	DeletionsHeld *HeldDeletions `json:"deletionsHeld,omitempty"`

	// RecentWrites are the deletions (and restores) of the last hour's
	// passes, which later passes judge by; a new leader starts from them.
	// +optional
	RecentWrites *RecentWrites `json:"recentWrites,omitempty"`

	// Pending is, while the profile is suspended, what its last pass would
	// have written had it not been; unset when the profile is not
	// suspended or nothing would be written.
	// +optional
	Pending *PendingLabelWrites `json:"pending,omitempty"`

	// LastSyncRequest is the value of the tagsync.io/sync-requested
	// annotation when the pass this status describes ran: once it equals the
	// value you set, a pass has served your request.
	// +optional
	LastSyncRequest string `json:"lastSyncRequest,omitempty"`
}

// PendingLabelWrites counts what a suspended profile's pass would have
// written.
type PendingLabelWrites struct {
	// Nodes counts the Nodes that would be patched.
	// +required
	Nodes int32 `json:"nodes"`
	// LabelsSet counts the labels that would be added or changed.
	// +optional
	LabelsSet int32 `json:"labelsSet,omitempty"`
	// LabelsRemoved counts the labels that would be removed.
	// +optional
	LabelsRemoved int32 `json:"labelsRemoved,omitempty"`
	// TaintsRemoved counts the Nodes that would lose the
	// labelsync.tagsync.io/pending taint.
	// +optional
	TaintsRemoved int32 `json:"taintsRemoved,omitempty"`
}

// LabelSyncProfile makes the labels of Metal3 BareMetalHosts under some
// prefixes appear, and stay, on the Nodes that run on them, in whichever
// workload cluster those Nodes are (reached through Cluster API). The host
// is the source of truth for in-scope labels. See docs/labelsync.md.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=lsp,categories=tagsync
// +kubebuilder:printcolumn:name="Prefixes",type=string,JSONPath=`.spec.prefixes`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.hostsMatched`
// +kubebuilder:printcolumn:name="InSync",type=integer,JSONPath=`.status.nodesInSync`
// +kubebuilder:printcolumn:name="Waiting",type=integer,JSONPath=`.status.hostsWaiting`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last Sync",type=date,JSONPath=`.status.lastSyncTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LabelSyncProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is which hosts own which labels.
	// +required
	Spec LabelSyncProfileSpec `json:"spec"`
	// Status is what the controller observed.
	// +optional
	Status LabelSyncProfileStatus `json:"status,omitempty"`
}

// LabelSyncProfileList is a list of LabelSyncProfile.
//
// +kubebuilder:object:root=true
type LabelSyncProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the LabelSyncProfiles.
	Items []LabelSyncProfile `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &LabelSyncProfile{}, &LabelSyncProfileList{})
		return nil
	})
}
