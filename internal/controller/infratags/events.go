package infratags

// Event reasons, on the Infrastructure.
const (
	// ReasonInvalidUserTags: the tags break the installer's rules; nothing
	// of the set is applied.
	ReasonInvalidUserTags = "InvalidUserTags"
	// ReasonInvalidInfrastructure: the Infrastructure cannot be read (no
	// infrastructure name, malformed tag list).
	ReasonInvalidInfrastructure = "InvalidInfrastructure"
	// ReasonUserTagsApplied: every resource in scope carries the tags.
	ReasonUserTagsApplied = "UserTagsApplied"
	// ReasonUserTagsFailed: some resources do not.
	ReasonUserTagsFailed = "UserTagsFailed"
	// ReasonEngineWriteFailed: the engine objects could not be written.
	ReasonEngineWriteFailed = "EngineWriteFailed"
)
