package workloadtags

// Condition and event reasons.
const (
	// ReasonTagged: every resource carries what the policy asks.
	ReasonTagged = "Tagged"
	// ReasonPartiallyTagged: some resources do not (yet): pending, failed
	// or contested.
	ReasonPartiallyTagged = "PartiallyTagged"
	// ReasonNoResources: no selected workload has a resource on the cloud.
	ReasonNoResources = "NoResources"
	// ReasonInvalidSpec: the policy cannot be applied as written.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonProviderNotConfigured: tagsync runs without the cloud's
	// provider, or it does not tag workloads' resources.
	ReasonProviderNotConfigured = "ProviderNotConfigured"
	// ReasonReadFailed: the resources' tags could not be read.
	ReasonReadFailed = "ReadFailed"
	// ReasonWriteFailed: some writes failed (event).
	ReasonWriteFailed = "WriteFailed"
	// ReasonWrote: a pass wrote tags (event).
	ReasonWrote = "Wrote"
	// ReasonSkippedTags: the cloud's rules or tag limit left tags out on
	// some resources (event).
	ReasonSkippedTags = "SkippedTags"
	// ReasonFighting: another writer keeps changing or removing keys the
	// policy puts back, and it stopped writing them there (Conflict's
	// reason, and a Warning event per key and resource).
	ReasonFighting = "Fighting"
)
