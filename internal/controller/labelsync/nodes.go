package labelsync

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// nodeUpdate is the change one Node needs.
type nodeUpdate struct {
	labels tags.LabelChanges
	// taints, when not nil, are the Node's taints without the pending
	// taint, which the update removes.
	taints []corev1.Taint
	// retained are the label keys the sync would remove but an
	// upsert-only source keeps (not in labels.Delete), sorted.
	retained []string
	// record, when not empty, is the Node's new label sync record
	// (v1alpha1.LabelSyncRecordAnnotation), written with the labels.
	record string
}

// updateFor is the change that brings a Node in line with its host. With
// retain (deletionPolicy Retain) no label is removed: the keys the sync
// would remove are kept, in retained, and the pending taint goes once the
// host's labels are in place, whatever else the Node keeps.
func updateFor(host, node map[string]string, prefixes []string, taints []corev1.Taint, retain bool) nodeUpdate {
	u := nodeUpdate{labels: tags.SyncLabels(host, node, prefixes)}
	if retain {
		u.retained, u.labels.Delete = u.labels.Delete, nil
	}
	u.taints = kit.ReleaseTaint(taints, v1alpha1.LabelSyncPendingTaintKey)
	return u
}

// isEmpty reports an update that changes nothing.
func (u nodeUpdate) isEmpty() bool { return u.labels.IsEmpty() && u.taints == nil && u.record == "" }

// remember drops from u's deletions the keys held for approval and sets u.record to the record the Node should carry once u
// is written, when it differs from the one it carries (current).
func (u *nodeUpdate) remember(plan tags.LabelSyncPlan, held, contested []string, current string) {
	if len(held) > 0 {
		// The contested keys are out of u already.
		u.labels.Delete = slices.DeleteFunc(slices.Clone(u.labels.Delete), func(k string) bool { return slices.Contains(held, k) })
		if len(u.labels.Delete) == 0 {
			u.labels.Delete = nil
		}
	}
	if text := plan.Record(append(slices.Clone(held), u.retained...), contested).Encode(); text != current {
		u.record = text
	}
}

// patch is the update as kit's Node write: a JSON merge patch of the
// changed label keys only (a removed key as null) and, when the pending
// taint goes, the taint list without it, guarded by the resourceVersion
// read (a merge patch replaces a list whole).
func (u nodeUpdate) patch() kit.NodePatch {
	np := kit.NodePatch{Labels: u.labels, Taints: u.taints}
	if u.record != "" {
		// Other sources keep their entries in the same record: a Node
		// changed since it was read is read again, not overwritten.
		np.Annotations, np.Guard = map[string]string{v1alpha1.LabelSyncRecordAnnotation: u.record}, true
	}
	return np
}
