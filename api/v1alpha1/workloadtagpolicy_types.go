package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// WorkloadResource is a kind of cloud resource a cluster's workloads cause,
// named by the Kubernetes object that refers to it.
// +kubebuilder:validation:Enum=PersistentVolume;Service;VolumeSnapshot;Ingress
type WorkloadResource string

const (
	// WorkloadPersistentVolume is the disk behind a bound PersistentVolume
	// (Azure managed disk, EBS volume), tagged for its claim.
	WorkloadPersistentVolume WorkloadResource = "PersistentVolume"
	// WorkloadService is what the cloud provider made for a Service of
	// type LoadBalancer (Azure: its public IP; AWS: its load balancer),
	// tagged for the Service.
	WorkloadService WorkloadResource = "Service"
	// WorkloadVolumeSnapshot is the snapshot behind a VolumeSnapshotContent
	// (Azure snapshot, EBS snapshot), tagged for its VolumeSnapshot.
	WorkloadVolumeSnapshot WorkloadResource = "VolumeSnapshot"
	// WorkloadIngress is the Application Load Balancer the AWS Load
	// Balancer Controller made for an Ingress, tagged for the Ingress; one
	// an IngressGroup shares is reported, not tagged. On Azure the
	// Application Gateway Ingress Controller's Ingresses share its one
	// Application Gateway: reported, not tagged.
	WorkloadIngress WorkloadResource = "Ingress"
)

// MaxWorkloadTags is the most tags one WorkloadTagPolicy may write: a
// resource keeps room for its creator's tags and others' within Azure's
// and EC2's 50.
const MaxWorkloadTags = 20

// WorkloadTagPolicySpec says which tags follow the workloads of the
// selected namespaces onto the cloud resources they cause. Only the keys
// listed in Tags are ever written (the allow-list): a team supplies a value
// through its namespace's or its claim's labels and annotations only where
// a template reads them.
// +kubebuilder:validation:XValidation:rule="(has(self.tags) && size(self.tags) > 0) || (has(self.presets) && size(self.presets) > 0)",message="a policy lists tags, presets or both"
type WorkloadTagPolicySpec struct {
	// Provider is the cloud whose resources are tagged: azure or aws.
	// +kubebuilder:default=azure
	// +optional
	Provider Provider `json:"provider,omitempty"`

	// Resources are the kinds of resources tagged: PersistentVolume (the
	// managed disk or EBS volume of a bound claim) and Service (what the
	// cloud provider made for a Service of type LoadBalancer: on Azure its
	// public IP, an IP several Services share being reported, not tagged;
	// on AWS its load balancer) and VolumeSnapshot (the snapshot behind a
	// VolumeSnapshotContent of the cloud's disk CSI driver, tagged for its
	// VolumeSnapshot; needs the CSI snapshot API, snapshot.storage.k8s.io/v1)
	// and Ingress (AWS: the Application Load Balancer of the AWS Load
	// Balancer Controller, tagged for the Ingress; Azure: the Application
	// Gateway of its ingress controller, which every such Ingress shares,
	// reported, not tagged).
	// +kubebuilder:default={PersistentVolume}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +listType=set
	// +optional
	Resources []WorkloadResource `json:"resources,omitempty"`

	// NamespaceSelector selects the namespaces whose workloads' resources
	// are tagged; absent selects every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// Tags are the tags written, each a key and a value template; a tag
	// whose template renders nothing for a workload (a label it reads is
	// absent) is not written on that workload's resources. With Presets,
	// a key listed here replaces the preset's tag of that key. At most 20
	// tags in all, presets' included.
	// +kubebuilder:validation:MaxItems=20
	// +listType=map
	// +listMapKey=key
	// +optional
	Tags []WorkloadTag `json:"tags,omitempty"`

	// Presets add the tags a cost tool reads (see WorkloadTagPreset).
	// +kubebuilder:validation:MaxItems=2
	// +listType=map
	// +listMapKey=name
	// +optional
	Presets []WorkloadTagPreset `json:"presets,omitempty"`

	// Suspend stops every cloud write while true: passes still read and
	// report what they would write.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// SyncEvery is how often every resource is compared with the policy
	// even when nothing was observed to change: a duration such as 10m,
	// at least 1m and at most 24h.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="syncEvery must be a duration such as 90s, 10m or 1h30m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) >= duration('1m')",message="syncEvery must be at least 1m to stay within cloud API quotas"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) <= duration('24h')",message="syncEvery must be at most 24h"
	// +optional
	SyncEvery string `json:"syncEvery,omitempty"`
}

// WorkloadTagPresetName names a cost tool's tag convention.
// +kubebuilder:validation:Enum=Kubecost;AWSSplitCostAllocation
type WorkloadTagPresetName string

const (
	// PresetKubecost writes the tags Kubecost allocates out-of-cluster
	// costs by: kubernetes_cluster (the preset's Cluster),
	// kubernetes_namespace (the workload's namespace) and
	// kubernetes_label_<key> for each of the preset's Labels (the label's
	// value on the claim or Service).
	PresetKubecost WorkloadTagPresetName = "Kubecost"
	// PresetAWSSplitCostAllocation writes each of the preset's Labels
	// under its own key (the label's value on the claim or Service): AWS's
	// split cost allocation data imports pods' labels as cost allocation
	// tags of the same keys, so a resource tagged alike is attributed with
	// the pods that carry them.
	PresetAWSSplitCostAllocation WorkloadTagPresetName = "AWSSplitCostAllocation"
)

// WorkloadTagPreset adds the tags of one cost tool's convention.
type WorkloadTagPreset struct {
	// Name is the convention: Kubecost or AWSSplitCostAllocation.
	// +required
	Name WorkloadTagPresetName `json:"name"`

	// Cluster is the cluster's name, written as Kubecost's
	// kubernetes_cluster tag; absent, that tag is not written.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// Labels are the Kubernetes label keys whose values (on the claim or
	// the Service) are copied: as kubernetes_label_<key> for Kubecost, as
	// <key> for AWSSplitCostAllocation.
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=110
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?$`
	// +listType=set
	// +optional
	Labels []string `json:"labels,omitempty"`
}

// AllTags returns the policy's tags: its presets' first, in the order
// WorkloadTagPreset documents, then Tags, a key of Tags replacing a
// preset's tag of that key.
func (s WorkloadTagPolicySpec) AllTags() []WorkloadTag {
	var out []WorkloadTag
	at := map[string]int{}
	add := func(t WorkloadTag) {
		if i, ok := at[t.Key]; ok {
			out[i] = t
			return
		}
		at[t.Key] = len(out)
		out = append(out, t)
	}
	for _, p := range s.Presets {
		switch p.Name {
		case PresetKubecost:
			if p.Cluster != "" {
				add(WorkloadTag{Key: "kubernetes_cluster", Value: p.Cluster})
			}
			add(WorkloadTag{Key: "kubernetes_namespace", Value: "${namespace}"})
			for _, l := range p.Labels {
				add(WorkloadTag{Key: "kubernetes_label_" + l, Value: "${labels['" + l + "']}"})
			}
		case PresetAWSSplitCostAllocation:
			for _, l := range p.Labels {
				add(WorkloadTag{Key: l, Value: "${labels['" + l + "']}"})
			}
		}
	}
	for _, t := range s.Tags {
		add(t)
	}
	return out
}

// SyncInterval returns SyncEvery as a duration (DefaultSyncInterval when
// it is empty or out of range).
func (s WorkloadTagPolicySpec) SyncInterval() time.Duration {
	return ControllerConfig{SyncEvery: s.SyncEvery}.SyncInterval()
}

// Tagging reports whether the policy tags resources of kind r.
func (s WorkloadTagPolicySpec) Tagging(r WorkloadResource) bool {
	if len(s.Resources) == 0 {
		return r == WorkloadPersistentVolume
	}
	for _, have := range s.Resources {
		if have == r {
			return true
		}
	}
	return false
}

// WorkloadTag is one tag a policy writes: its key, and its value as a
// template.
type WorkloadTag struct {
	// Key is the tag's name, 1 to 127 characters (within both clouds'
	// limits); the cloud's other rules (reserved prefixes, characters) are
	// checked by the controller, which reports a key its cloud refuses.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=127
	// +required
	Key string `json:"key"`

	// Value is the tag's value: literal text with placeholders ${namespace},
	// ${name} and ${kind} (of the object the resource serves: the claim of
	// a volume, or the Service),
	// ${labels['k']} and ${annotations['k']} (the object's), and
	// ${namespace.labels['k']} and ${namespace.annotations['k']} (its
	// namespace's). For example "${namespace.labels['cost-center']}" or
	// "${namespace}/${name}".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^([^$]|[$][^{]|[$]$|[$][{](namespace|name|kind|(namespace[.])?(labels|annotations)[[]\\'[^\\']+\\'[]])[}])*$')",message="value placeholders are ${namespace}, ${name}, ${kind}, ${labels['k']}, ${annotations['k']}, ${namespace.labels['k']} and ${namespace.annotations['k']}"
	// +required
	Value string `json:"value"`
}

// WorkloadTagPolicyStatus reports what the controller found and wrote.
type WorkloadTagPolicyStatus struct {
	// Conditions are Ready, Suspended and Conflict (and Events when cloud
	// change events are on).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastSyncTime is when every resource was last compared with the policy.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// Resources counts the cloud resources of the selected workloads that
	// the policy tags.
	// +optional
	Resources int32 `json:"resources"`

	// InSync counts those that carry every tag the policy asks of them.
	// +optional
	InSync int32 `json:"inSync"`

	// Pending counts resources the cloud does not show yet (their creator
	// is still creating them): they are looked for again shortly.
	// +optional
	Pending int32 `json:"pending"`

	// Shared counts resources many workloads use (Azure Files shares, EFS):
	// reported, never tagged for one workload.
	// +optional
	Shared int32 `json:"shared"`

	// Failed counts resources whose last read or write failed.
	// +optional
	Failed int32 `json:"failed"`

	// LastSyncRequest is the value of the tagsync.io/sync-requested
	// annotation when the pass this status describes ran: once it equals the
	// value you set, a pass with fresh cloud reads has served your request.
	// +optional
	LastSyncRequest string `json:"lastSyncRequest,omitempty"`

	// RecentWrites are the keys the policy wrote more than once on one
	// resource within the last hour (restores: each write's time), so that
	// a new leader stops a fight where the old one did.
	// +optional
	RecentWrites *RecentWrites `json:"recentWrites,omitempty"`
}

// WorkloadTagPolicy makes the cloud resources a cluster's workloads cause
// (disks of PersistentVolumes today) carry tags drawn from the workloads'
// namespaces and objects, and keeps them there. It never deletes a tag: a
// key removed from the policy, or whose value no longer renders, is
// released and stays as it was. Its Ready condition is true when the last
// pass found every resource and each carries what the policy asks.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=wtp,categories=tagsync
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Resources",type=integer,JSONPath=`.status.resources`
// +kubebuilder:printcolumn:name="InSync",type=integer,JSONPath=`.status.inSync`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pending`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Last Sync",type=date,JSONPath=`.status.lastSyncTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkloadTagPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what to tag and with what.
	// +required
	Spec WorkloadTagPolicySpec `json:"spec"`
	// Status is what the controller observed.
	// +optional
	Status WorkloadTagPolicyStatus `json:"status,omitempty"`
}

// WorkloadTagPolicyList is a list of WorkloadTagPolicy.
//
// +kubebuilder:object:root=true
type WorkloadTagPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the policies.
	Items []WorkloadTagPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &WorkloadTagPolicy{}, &WorkloadTagPolicyList{})
		return nil
	})
}
