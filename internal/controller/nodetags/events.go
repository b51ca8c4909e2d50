package nodetags

import (
	"fmt"
	"strings"

	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

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
	// ReasonLabelsSynced: labels were written from cloud tags.
	ReasonLabelsSynced = "LabelsSynced"
	// ReasonTagsSynced: cloud tags were written from labels.
	ReasonTagsSynced = "TagsSynced"
	// ReasonInvalidSpec: the NodeTagSync cannot be used as written.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonCloudReadFailed: the cloud could not be read.
	ReasonCloudReadFailed = "CloudReadFailed"
	// ReasonFallback: the target resource fell back (Instance → scale set).
	ReasonFallback = "TargetFallback"
	// ReasonSpecWarning: the spec is valid but cannot do what it seems to
	// ask (e.g. its tag filters exclude every tag).
	ReasonSpecWarning = "SpecWarning"
	// ReasonNodePending: a node keeps the pending taint because tagsync
	// cannot sync it.
	ReasonNodePending = "NodePending"
)

// shownInNotes is how many items an event note lists before "and N more".
const shownInNotes = 8

// describePatch renders a patch for an event, short enough for any patch:
// "set 2: a=1, b=2; removed 1: c", listing the first few of each and
// "and N more".
func describePatch(set map[string]string, del []string) string {
	var parts []string
	if len(set) > 0 {
		var kv []string
		for _, k := range tags.Set(set).Names() {
			kv = append(kv, fmt.Sprintf("%s=%s", k, set[k]))
		}
		parts = append(parts, fmt.Sprintf("set %d: %s", len(kv), notify.Summary(kv, shownInNotes)))
	}
	if len(del) > 0 {
		parts = append(parts, fmt.Sprintf("removed %d: %s", len(del), notify.Summary(del, shownInNotes)))
	}
	return strings.Join(parts, "; ")
}
