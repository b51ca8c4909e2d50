package nodetags

// Event reasons, on the Node concerned (or the NodeTagSync for pass-wide ones).
const (
	// ReasonTagConflict: a tag and its label changed differently on both sides,
	// or the Nodes of one scale set disagree.
	ReasonTagConflict = "TagConflict"
	// ReasonTagUnrepresentable: a tag or label could not be carried across.
	ReasonTagUnrepresentable = "TagUnrepresentable"
	// ReasonCloudWriteFailed: writing tags to the cloud failed.
	ReasonCloudWriteFailed = "CloudWriteFailed"
	// ReasonNodeWriteFailed: writing labels to the Node failed.
	ReasonNodeWriteFailed = "NodeWriteFailed"
	// ReasonTagsWiped: the cloud's tags were rewritten wholesale.
	ReasonTagsWiped = "TagsWiped"
	// ReasonTagsRestored: tags that came from the labels vanished from a
	// resource that kept its other tags (a platform's rewrite) and were put
	// back.
	ReasonTagsRestored = "TagsRestored"
	// ReasonRestoreStopped: a tag put back maxRestores times within an
	// hour keeps being removed by another writer; it is no longer put back
	// there (no endless fight), and the labels stay.
	ReasonRestoreStopped = "RestoreStopped"
	// ReasonLabelsSynced: labels were written from cloud tags.
	ReasonLabelsSynced = "LabelsSynced"
	// ReasonTagsSynced: cloud tags were written from labels.
	ReasonTagsSynced = "TagsSynced"
	// ReasonInvalidSpec: the NodeTagSync cannot be used as written.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonCloudReadFailed: the cloud could not be read.
	ReasonCloudReadFailed = "CloudReadFailed"
	// ReasonFallback: the target resource fell back (Azure: Instance → scale
	// set; AWS: ScaleSet → an instance in no Auto Scaling group).
	ReasonFallback = "TargetFallback"
	// ReasonSpecWarning: the spec is valid but cannot do what it seems to
	// ask (e.g. its tag filters exclude every tag).
	ReasonSpecWarning = "SpecWarning"
	// ReasonNodePending: a node keeps the pending taint because tagsync
	// cannot sync it.
	ReasonNodePending = "NodePending"
	// ReasonDeletionsHeld: a pass held back a mass deletion; the note says
	// how to approve it.
	ReasonDeletionsHeld = "DeletionsHeld"
	// ReasonDeletionsApproved: a held mass deletion was approved and is
	// written.
	ReasonDeletionsApproved = "DeletionsApproved"
	// ReasonDeletionsRetained: deletionPolicy Retain kept tags or labels
	// the sync would have deleted.
	ReasonDeletionsRetained = "DeletionsRetained"
)

// shownInNotes is how many items an event note lists before "and N more".
const shownInNotes = 8
