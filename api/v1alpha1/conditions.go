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
)
