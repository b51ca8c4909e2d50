package v1alpha1

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
	// message names the sources down and why. Absent when tagsync runs
	// without events.
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
)
