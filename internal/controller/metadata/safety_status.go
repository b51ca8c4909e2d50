package metadata

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
)

// setSuspended sets a request's Suspended condition: true while it or its
// CloudMetadata is suspended, with what a pass would write; false once it
// resumed (absent until it was first suspended).
func (o *outcome) setSuspended(conds []metav1.Condition, set func(string, bool, string, string)) {
	switch {
	case o.suspended != "":
		set(v1alpha1.ConditionSuspended, true, v1alpha1.ReasonSuspended, fmt.Sprintf(
			"%s is suspended (spec.suspend): the resources are read and planned, nothing is written; a pass would write %d resource(s) (%d tag(s) set, %d deleted)",
			o.suspended, o.pending, o.wouldSet, o.wouldDelete))
	case meta.FindStatusCondition(conds, v1alpha1.ConditionSuspended) != nil:
		set(v1alpha1.ConditionSuspended, false, v1alpha1.ReasonNotSuspended, "not suspended: the request is written")
	}
}

// safetyStatus sets the CloudMetadata's Suspended and DeletionsHeld
// conditions, its held mass deletion (with the approval token) and the
// count of deletions Retain kept.
func (p *pass) safetyStatus(s *v1alpha1.CloudMetadataStatus) {
	set := func(typ string, ok bool, reason, msg string) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: typ, Status: kit.ConditionStatus(ok), Reason: reason,
			Message: notify.Fit(msg), ObservedGeneration: p.cm.Generation})
	}
	switch {
	case p.cm.Spec.Suspend:
		set(v1alpha1.ConditionSuspended, true, v1alpha1.ReasonSuspended, fmt.Sprintf(
			"suspended (spec.suspend): the resources are read and planned, nothing is written; a pass would write %d resource(s)", p.pending()))
	case meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionSuspended) != nil:
		set(v1alpha1.ConditionSuspended, false, v1alpha1.ReasonNotSuspended, "not suspended: the requests are written")
	}
	s.RetainedDeletions = int32(p.retainedCount())
	s.DeletionsHeld = nil
	h := p.hold
	switch {
	case h != nil && !h.written:
		s.DeletionsHeld = h.record
		msg := p.holdMessage(h)
		if h.approved {
			msg = fmt.Sprintf("approved with token %s, but not all %d deletion(s) could be written yet (a request is suspended or a write failed): the next pass writes them", h.record.Token, h.md.Count())
		}
		set(v1alpha1.ConditionDeletionsHeld, true, v1alpha1.ReasonMassDeletion, msg)
	case s.RetainedDeletions > 0:
		set(v1alpha1.ConditionDeletionsHeld, true, v1alpha1.ReasonRetained, p.retainMessage(int(s.RetainedDeletions)))
	case h != nil:
		set(v1alpha1.ConditionDeletionsHeld, false, v1alpha1.ReasonNoneHeld, fmt.Sprintf("the %d deletion(s) approved with token %s were written", h.md.Count(), h.record.Token))
	default:
		set(v1alpha1.ConditionDeletionsHeld, false, v1alpha1.ReasonNoneHeld, "no deletion is held")
	}
}

// pending is how many resources the pass would have written but did not,
// being suspended.
func (p *pass) pending() int {
	n := 0
	for _, tp := range p.planned {
		n += tp.o.pending
	}
	return n
}

// suspension is Ready's reason while the CloudMetadata or a request is
// suspended.
func suspension(outcomes []*outcome) *condition {
	var who []string
	pending := 0
	for _, o := range outcomes {
		if o.suspended != "" && !slices.Contains(who, o.suspended) {
			who = append(who, o.suspended)
		}
		pending += o.pending
	}
	if len(who) == 0 {
		return nil
	}
	return &condition{v1alpha1.ReasonSuspended, fmt.Sprintf("suspended (%s): nothing is written for it; a pass would write %d resource(s)",
		strings.Join(who, ", "), pending)}
}

// waitingForApproval is Ready's reason while a mass deletion waits for a
// person.
func (p *pass) waitingForApproval([]*outcome) *condition {
	if h := p.hold; h != nil && !h.written {
		return &condition{v1alpha1.ReasonMassDeletion, fmt.Sprintf("%d tag deletion(s) on %d resource(s) wait for approval: see the DeletionsHeld condition",
			h.md.Count(), len(h.md.Deletions))}
	}
	return nil
}
