package kit

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/tags"
)

// maxHeldListed bounds the resources a HeldDeletions record lists.
const maxHeldListed = 50

// HeldDeletions is the status record of a mass deletion m held by a pass
// at now, and whether obj's approval annotation (ApproveDeletionsAnnotation)
// approves it. prev is the record the object's status holds (nil: none):
// when it names the same set (Digest), the set keeps the time it was first
// held, and so its token; any other set is stamped now and needs a new
// approval.
func HeldDeletions(obj metav1.Object, m tags.MassDeletion, prev *v1alpha1.HeldDeletions, now time.Time) (*v1alpha1.HeldDeletions, bool) {
	since := metav1.NewTime(now.UTC().Truncate(time.Second))
	if prev != nil && prev.Digest == m.Digest() {
		since = prev.Since
	}
	rec := &v1alpha1.HeldDeletions{Token: m.ApprovalToken(since.Time), Digest: m.Digest(), Since: since,
		Count: int32(m.Count()), Reason: m.Reason}
	for _, d := range m.Deletions[:min(len(m.Deletions), maxHeldListed)] {
		rec.Resources = append(rec.Resources, v1alpha1.HeldResource{Resource: d.Resource, Tags: d.Names})
	}
	return rec, obj.GetAnnotations()[v1alpha1.ApproveDeletionsAnnotation] == rec.Token
}
