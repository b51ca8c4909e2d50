package labelsync

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// nodeUpdate is the change one Node needs (kit.NodeUpdate: its Record is
// the Node's new label sync record, v1alpha1.LabelSyncRecordAnnotation,
// written with the labels; its Retained the keys the sync would remove but
// an upsert-only source keeps, not in Labels.Delete, sorted).
type nodeUpdate struct{ kit.NodeUpdate }

// updateFor is the change that brings a Node in line with its host. With
// retain (deletionPolicy Retain) no label is removed: the keys the sync
// would remove are kept, in retained, and the pending taint goes once the
// host's labels are in place, whatever else the Node keeps.
func updateFor(host, node map[string]string, prefixes []string, taints []corev1.Taint, retain bool) nodeUpdate {
	u := nodeUpdate{kit.NodeUpdate{Labels: tags.SyncLabels(host, node, prefixes)}}
	if retain {
		u.Retained, u.Labels.Delete = u.Labels.Delete, nil
	}
	u.Taints = kit.ReleaseTaint(taints, v1alpha1.LabelSyncPendingTaintKey)
	return u
}

// remember drops from u's deletions the keys held for approval and sets u.Record to the record the Node should carry once u
// is written, when it differs from the one it carries (current).
func (u *nodeUpdate) remember(plan tags.LabelSyncPlan, held, contested []string, current string) {
	if len(held) > 0 {
		// The contested keys are out of u already.
		u.Labels.Delete = slices.DeleteFunc(slices.Clone(u.Labels.Delete), func(k string) bool { return slices.Contains(held, k) })
		if len(u.Labels.Delete) == 0 {
			u.Labels.Delete = nil
		}
	}
	if text := plan.Record(append(slices.Clone(held), u.Retained...), contested).Encode(); text != current {
		u.Record = text
	}
}

// patch is the update as kit's Node write: a JSON merge patch of the
// changed label keys only (a removed key as null) and, when the pending
// taint goes, the taint list without it, guarded by the resourceVersion
// read (a merge patch replaces a list whole). Other sources keep their
// entries in the same record: with a record, a Node changed since it was
// read is read again, not overwritten.
func (u nodeUpdate) patch() kit.NodePatch {
	return u.Patch(v1alpha1.LabelSyncRecordAnnotation, u.Record != "")
}
