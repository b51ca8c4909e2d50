package v1alpha1

// The annotations and taints tagsync reads or writes on objects users own
// (its own kinds, Nodes, OpenShift's engine objects). They are part of the
// API: users set them, tools (tagsync cleanup, the playground) read them,
// and they do not change names within a version.
const (
	// SyncRequestAnnotation on an object a controller serves (a
	// NodeTagSync, a CloudMetadata, a LabelSyncProfile) asks for a pass
	// now: set it to any new value (for example a timestamp). The object's
	// status.lastSyncRequest says when a pass has served it.
	SyncRequestAnnotation = "tagsync.io/sync-requested"

	// ApproveDeletionsAnnotation, set on a tagsync object to the approval
	// token its DeletionsHeld condition names, lets its next pass write that
	// exact set of held deletions, once:
	//
	//	kubectl annotate nodetagsync default tagsync.io/approve-deletions=<token> --overwrite
	//
	// The token names the held set and when it was first held; a different
	// set, or the same set held again later, has another token.
	ApproveDeletionsAnnotation = "tagsync.io/approve-deletions"

	// AcknowledgeFightsAnnotation on a WorkloadTagPolicy, set to a new
	// value (a timestamp, say), ends the fights it reports: the keys it
	// stopped putting back because another writer kept taking them away
	// are written again, and counted afresh.
	AcknowledgeFightsAnnotation = "tagsync.io/acknowledge-fights"

	// LastSyncedTagsAnnotation holds, on each Node the node sync manages,
	// the merge base of the three-way merge: the tags both sides last
	// agreed on and the configuration they were agreed under (the
	// NodeTagSync's UID, the label prefix, the direction and the provider).
	// A Node without it, or whose base was made under another
	// configuration, has no history, so its next sync is a union that
	// deletes nothing.
	LastSyncedTagsAnnotation = "tagsync.io/last-synced-tags"

	// NodeTagsPendingTaintKey is the taint (effect NoSchedule, any value) a
	// node can be registered with (kubelet --register-with-taints, or an AKS
	// node pool's --node-taints) so nothing is scheduled on it before its
	// labels are synced: the node sync's pass that first gives the node its
	// labels removes it, in the same write. A node tagsync cannot sync keeps
	// the taint and is reported.
	NodeTagsPendingTaintKey = "nodetags.tagsync.io/pending"

	// LabelSyncPendingTaintKey is the taint (effect NoSchedule, any value) a
	// workload cluster's Node can be registered with (kubelet
	// --register-with-taints, e.g. from a KubeadmConfigTemplate) so that
	// nothing is scheduled on it before its BareMetalHost's labels are in
	// place: the LabelSyncProfile's pass that finds them in place removes
	// it.
	LabelSyncPendingTaintKey = "labelsync.tagsync.io/pending"

	// RequiresVersionAnnotation, on a NodeTagSync, names the oldest
	// tagsync release that may act on its spec (the chart sets it to its
	// appVersion). An older controller refuses the object (InvalidSpec)
	// and writes nothing for it, so a rolling upgrade never runs a new
	// spec on old code.
	RequiresVersionAnnotation = "tagsync.io/requires-version"

	// LabelSyncRecordAnnotation is label sync's memory on a Node: for each
	// prefix it syncs there, the source that syncs it and the label keys
	// under it the source set or found agreeing with its host (JSON, see
	// tags.LabelRecord). A label under a prefix without an entry was not
	// written by label sync: its removal waits for a person's approval.
	LabelSyncRecordAnnotation = "labelsync.tagsync.io/owned"

	// SourceAnnotation names, on an object tagsync derived from another
	// (the OpenShift adapter's AzureMetadata and AWSMetadata, derived from
	// the Infrastructure named cluster), the object it was derived from.
	SourceAnnotation = "tagsync.io/source"
)
