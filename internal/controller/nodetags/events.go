package nodetags

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

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
)

// notifier emits Kubernetes events, once per distinct problem: a conflict or
// unrepresentable tag seen on every pass is reported when it first appears,
// not every resync. Forget clears what is resolved so a recurrence is told.
type notifier struct {
	rec events.EventRecorder

	mu   sync.Mutex
	seen map[string]bool // problems reported in the previous pass
	next map[string]bool // problems seen in this pass
}

func newNotifier(rec events.EventRecorder) *notifier {
	return &notifier{rec: rec, seen: map[string]bool{}, next: map[string]bool{}}
}

// once emits a Warning event about obj unless the same problem (key) was
// already reported and has persisted since.
func (n *notifier) once(obj runtime.Object, key, reason, note string) {
	n.mu.Lock()
	n.next[key] = true
	known := n.seen[key]
	n.mu.Unlock()
	if !known {
		n.warn(obj, reason, note)
	}
}

// endPass forgets problems that did not recur in the pass just finished.
func (n *notifier) endPass() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seen, n.next = n.next, map[string]bool{}
}

func (n *notifier) warn(obj runtime.Object, reason, note string) {
	if n.rec != nil {
		n.rec.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Sync", "%s", note)
	}
}

func (n *notifier) normal(obj runtime.Object, reason, note string) {
	if n.rec != nil {
		n.rec.Eventf(obj, nil, corev1.EventTypeNormal, reason, "Sync", "%s", note)
	}
}

// describePatch renders a patch for an event: "set a=1, b=2; removed c".
func describePatch(set map[string]string, del []string) string {
	var parts []string
	if len(set) > 0 {
		var kv []string
		for _, k := range tags.Set(set).Names() {
			kv = append(kv, fmt.Sprintf("%s=%s", k, set[k]))
		}
		parts = append(parts, "set "+strings.Join(kv, ", "))
	}
	if len(del) > 0 {
		parts = append(parts, "removed "+strings.Join(del, ", "))
	}
	return strings.Join(parts, "; ")
}
