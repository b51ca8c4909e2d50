package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types and reasons shared by every tagsync kind.
const (
	// ConditionConflict is true while another object wants a different
	// value for a key this object would write on the same cloud resource or
	// Node: neither writes the contested key, both carry this condition with
	// the other object named in its message, and a Warning event. When the
	// other object goes away the survivor is reconciled at once and writes.
	ConditionConflict = "Conflict"
	// ConditionAuditFailing is true while the audit sink cannot take
	// records: with the default fail-closed audit no further cloud mutation
	// is made until a record can be written again.
	ConditionAuditFailing = "AuditFailing"
	// ConditionEvents says whether cloud change events drive the object's
	// passes. True (ReasonEventsOn) while events are on and every event
	// source delivers: a cloud change reaches the object in seconds and it
	// polls only at the long events resync interval, as a safety net.
	// False (ReasonEventSourceDown) while a source is down or none is
	// registered: the object polls at its configured interval, and the
	// message names the sources down and why. False (ReasonEventsSilent)
	// while the sources listen but events stopped arriving (the echoes of
	// tagsync's own writes are overdue, or a full pass found changes no
	// event announced): polling at the configured interval too. Absent
	// when tagsync runs without events.
	ConditionEvents = "Events"

	// ReasonContestedKeys is ConditionConflict's reason when another object
	// wants other values for some keys.
	ReasonContestedKeys = "ContestedKeys"
	// ReasonNoConflict is ConditionConflict's reason when no key is
	// contested.
	ReasonNoConflict = "NoConflict"
	// ReasonPermanentError is the reason of a condition that reports an
	// error a person must fix (forbidden, not found, invalid): it is retried
	// with a long backoff, and at once when the spec changes.
	ReasonPermanentError = "PermanentError"
	// ReasonEventsOn is ConditionEvents' reason while every event source
	// delivers.
	ReasonEventsOn = "EventsOn"
	// ReasonEventSourceDown is ConditionEvents' reason while an event
	// source is down (or none is registered): polling is the fallback.
	ReasonEventSourceDown = "EventSourceDown"
	// ReasonEventsSilent is ConditionEvents' reason while every source is
	// up but a cloud's events stopped arriving (tagsync's own writes are
	// not echoed, or a full pass found changes no event announced):
	// polling is the fallback until that cloud delivers again.
	ReasonEventsSilent = "EventsSilent"
)

// Conditions and reasons of the safety controls every kind shares
// (spec.suspend, spec.deletionPolicy, the mass-deletion guard).
const (
	// ConditionSuspended is true while spec.suspend is set: the object's
	// passes read and report but write nothing, to the cloud or to any
	// Node. Absent (or False) otherwise.
	ConditionSuspended = "Suspended"
	// ConditionDeletionsHeld is true while the object's last pass held back
	// deletions: a mass deletion waiting for a person's approval
	// (ReasonMassDeletion, approved with ApproveDeletionsAnnotation), or
	// deletions an upsert-only object never makes (ReasonRetained). The
	// message names what was held and why. False (ReasonNoneHeld) when
	// nothing was.
	ConditionDeletionsHeld = "DeletionsHeld"

	// ReasonSuspended is ConditionSuspended's reason while suspended.
	ReasonSuspended = "Suspended"
	// ReasonNotSuspended is ConditionSuspended's reason when not.
	ReasonNotSuspended = "NotSuspended"
	// ReasonMassDeletion is ConditionDeletionsHeld's reason for deletions
	// that wait for approval.
	ReasonMassDeletion = "MassDeletion"
	// ReasonRetained is ConditionDeletionsHeld's reason for deletions an
	// object with deletionPolicy Retain kept.
	ReasonRetained = "Retained"
	// ReasonNoneHeld is ConditionDeletionsHeld's reason when nothing is
	// held.
	ReasonNoneHeld = "NoneHeld"
)

// DeletionPolicy says whether an object deletes the cloud tags and labels
// its sync would remove.
// +kubebuilder:validation:Enum=Delete;Retain
type DeletionPolicy string

const (
	// DeletionPolicyDelete deletes what the sync decides to remove (the
	// default): a tag or label removed on one side is removed on the other.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyRetain is upsert-only: tags and labels are created and
	// updated, never deleted; what would have been deleted is kept and
	// reported (ConditionDeletionsHeld, ReasonRetained).
	DeletionPolicyRetain DeletionPolicy = "Retain"
)

// HeldDeletions is a mass deletion, or deletions whose intent is
// unclear, held back for a person's approval.
type HeldDeletions struct {
	// Token approves exactly this set once, written to the
	// tagsync.io/approve-deletions annotation.
	Token string `json:"token"`
	// Digest identifies the set of deletions (resources and keys).
	Digest string `json:"digest"`
	// Since is when this exact set was first held.
	Since metav1.Time `json:"since"`
	// Count is the number of held tag deletions.
	Count int32 `json:"count"`
	// Reason says which rule held them.
	Reason string `json:"reason"`
	// Resources lists the held deletions by resource, at most 50.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	Resources []HeldResource `json:"resources,omitempty"`
}

// HeldResource is the held deletions of one cloud resource.
type HeldResource struct {
	// Resource is the resource's ID.
	Resource string `json:"resource"`
	// Tags are the tag names whose deletion is held.
	// +listType=atomic
	Tags []string `json:"tags"`
	// Labels is set when the held deletions are of the labels of the
	// Nodes synced with the resource (the tags left the resource), not of
	// the resource's tags.
	// +optional
	Labels bool `json:"labels,omitempty"`
}

// RecentWrites is what a controller's passes did within the last hour
// that later passes judge by, kept in the status so that a new leader (or
// a restarted controller) judges them as the old one would have: the
// mass-deletion guard counts a tag's deletions across passes, and a tag
// put back too often on one resource is left alone.
type RecentWrites struct {
	// Deletions are the tag (or label) deletions the passes wrote, at
	// most 4 resources per tag (enough for the guard: more than 3 holds).
	// +kubebuilder:validation:MaxItems=200
	// +listType=atomic
	// +optional
	Deletions []RecentWrite `json:"deletions,omitempty"`
	// Restores are the tags the passes put back after another writer
	// removed or changed them (NodeTagSync, CloudMetadata), or wrote more
	// than once (WorkloadTagPolicy: its first write too, the tag as
	// key=value).
	// +kubebuilder:validation:MaxItems=200
	// +listType=atomic
	// +optional
	Restores []RecentWrite `json:"restores,omitempty"`
}

// RecentWrite is one tag's recent writes on one resource.
type RecentWrite struct {
	// Resource is the resource's ID (a Node's name for label sync).
	Resource string `json:"resource"`
	// Tag is the tag's (or label's) name.
	Tag string `json:"tag"`
	// Times are when the writes were made, oldest first, at most 4.
	// +kubebuilder:validation:MaxItems=4
	// +listType=atomic
	Times []metav1.Time `json:"times"`
}
