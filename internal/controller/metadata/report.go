package metadata

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

// report is the report stage of a full pass, after the writes: each
// target's pass in the metrics (observe), the events (emitEvents), a status
// patch per object whose status changed (writeStatuses), the record of the
// full pass a targeted one relies on (doneFull), and when to run again
// (next).
func (p *pass) report(ctx context.Context, problems []refProblem, outcomes []*outcome) (reconcile.Result, error) {
	for _, o := range outcomes {
		o.observe(p)
	}
	p.emitEvents(problems, outcomes)
	if err := p.writeStatuses(ctx, problems, outcomes); err != nil {
		// Not done: the retry must be a full pass that writes the
		// statuses, not one served by the last full pass that succeeded.
		p.r.index.needFull(p.key())
		return reconcile.Result{}, err
	}
	p.doneFull(problems, outcomes)
	if why := retriedSoon(outcomes); why != "" {
		kit.KeepForRetry(ctx, why) // the changes it served: their deliveries wait for the retry
	}
	return reconcile.Result{RequeueAfter: p.next(outcomes)}, nil
}

// retriedSoon says why the pass runs again before syncEvery (next): a
// target was throttled or met transient errors; "" when none was.
func retriedSoon(outcomes []*outcome) string {
	for _, o := range outcomes {
		switch {
		case o.retryAfter > 0:
			return fmt.Sprintf("%s was throttled", o.t.key())
		case o.transient:
			return fmt.Sprintf("%s met transient errors", o.t.key())
		}
	}
	return ""
}

// transientRetry is how soon a pass that hit transient write errors runs
// again (never later than syncEvery).
const transientRetry = 30 * time.Second

// next is when the CloudMetadata's next pass is due: after syncEvery, sooner
// after transient failures, later after errors only a person can fix
// (kit.Backoff), and never before a throttled scope reopens.
func (p *pass) next(outcomes []*outcome) time.Duration {
	every := p.every
	next := every
	var throttled time.Duration
	transient, permanent := false, false
	for _, o := range outcomes {
		transient = transient || o.transient
		permanent = permanent || o.permanent
		throttled = max(throttled, o.retryAfter)
	}
	switch {
	case transient:
		next = min(next, transientRetry)
	case permanent:
		next = p.st.backoff.Failed(specKeyOf(p.cm, targetsOf(outcomes)), every)
	default:
		p.st.backoff.Reset()
	}
	if throttled > 0 {
		return throttled
	}
	return next
}

// writeStatuses patches the status of every target and of the
// CloudMetadata, each only when it changed.
func (p *pass) writeStatuses(ctx context.Context, problems []refProblem, outcomes []*outcome) error {
	now := metav1.NewTime(p.r.Now().Truncate(time.Second))
	every := p.cm.Spec.ControllerConfig.SyncInterval()
	for _, o := range outcomes {
		before := o.t.obj.DeepCopyObject().(client.Object)
		s := o.status(p.cm, *o.t.status, now)
		steady := *s.DeepCopy()
		steady.LastSyncTime = o.t.status.LastSyncTime
		s.LastSyncTime = kit.StampSyncTime(o.t.status.LastSyncTime, s.LastSyncTime, equality.Semantic.DeepEqual(steady, *o.t.status), every)
		*o.t.status = s
		if err := p.r.PatchStatus(ctx, o.t.obj, before); err != nil {
			return err
		}
	}
	before := p.cm.DeepCopy()
	s := p.cloudMetadataStatus(problems, outcomes, now)
	s.RecentWrites = p.st.recent.Status(p.r.Now())
	steady := *s.DeepCopy()
	steady.LastSyncTime = p.cm.Status.LastSyncTime
	s.LastSyncTime = kit.StampSyncTime(p.cm.Status.LastSyncTime, s.LastSyncTime, equality.Semantic.DeepEqual(steady, p.cm.Status), every)
	p.cm.Status = s
	return p.r.PatchStatus(ctx, p.cm, before)
}

// status is the target's new status.
func (o *outcome) status(cm *v1alpha1.CloudMetadata, old v1alpha1.ProviderMetadataStatus, now metav1.Time) v1alpha1.ProviderMetadataStatus {
	s := *old.DeepCopy()
	s.CloudMetadata = cm.Name
	gen := o.t.obj.GetGeneration()
	set := func(typ string, ok bool, reason, msg string) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: typ, Status: kit.ConditionStatus(ok), Reason: reason,
			Message: notify.Fit(msg), ObservedGeneration: gen})
	}
	o.auditFailing(s.Conditions, set)
	o.setSuspended(s.Conditions, set)
	switch {
	case o.invalid != nil:
		set(v1alpha1.ConditionApproved, false, ReasonInvalidTags, "the request breaks the "+o.t.cloud+" tag rules; nothing is applied: "+joinErrs(o.invalid))
	case o.approved:
		set(v1alpha1.ConditionApproved, true, ReasonValid, fmt.Sprintf("the tags pass the %s tag rules; applied by CloudMetadata %q", o.t.cloud, cm.Name))
		s.ResourceTags = activeList(o.t)
	}
	o.setConflict(&s.Conditions, gen)
	if o.held != nil {
		s.Held = heldStatus(o.t, o.held, nil)
	}
	if o.request != nil {
		set(v1alpha1.ConditionRequest, false, o.request.reason, o.request.message)
	} else if o.approved {
		done := "carried out"
		if o.suspended != "" {
			done = "planned (suspended: not written)"
		}
		set(v1alpha1.ConditionRequest, true, ReasonCompleted, fmt.Sprintf("%s of %d tag(s) at generation %d %s over %d matched resource(s)",
			o.t.opcode, len(o.t.resourceTags), gen, done, o.matched))
	}
	if !o.approved || (o.request != nil && o.matched == 0) {
		set(v1alpha1.ConditionApplied, false, ReasonNotApplied, "nothing was applied in the last pass: see the Approved and Request conditions")
		setRequestReady(&s.Conditions, gen)
		s.ObservedGeneration = gen
		return s
	}
	o.setApplied(set)
	if o.policyHits > 0 {
		set(v1alpha1.ConditionPolicy, false, ReasonLimitReached, fmt.Sprintf("%d resource(s) cannot take every requested tag within their tag limit; limit policy %s (see failures)",
			o.policyHits, limitOf(cm)))
	} else {
		set(v1alpha1.ConditionPolicy, true, ReasonWithinLimits, "every matched resource has room for the requested tags")
	}
	setRequestReady(&s.Conditions, gen)
	s.ObservedGeneration, s.LastSyncTime = gen, &now
	s.Matched, s.InSync, s.Failed = int32(o.matched), int32(o.inSync), int32(o.failed())
	s.Failures, s.MoreFailures = nil, 0
	if n := len(o.failures); n > v1alpha1.MaxFailures {
		s.Failures, s.MoreFailures = o.failures[:v1alpha1.MaxFailures], int32(n-v1alpha1.MaxFailures)
	} else if n > 0 {
		s.Failures = o.failures
	}
	return s
}

// requestNotReady are the conditions that make a request not Ready, in the
// order Ready reports them, each with the status that does.
var requestNotReady = []struct {
	typ    string
	status metav1.ConditionStatus
}{
	{v1alpha1.ConditionApproved, metav1.ConditionFalse},
	{v1alpha1.ConditionRequest, metav1.ConditionFalse},
	{v1alpha1.ConditionAuditFailing, metav1.ConditionTrue},
	{v1alpha1.ConditionSuspended, metav1.ConditionTrue},
	{v1alpha1.ConditionConflict, metav1.ConditionTrue},
	{v1alpha1.ConditionApplied, metav1.ConditionFalse},
}

// setRequestReady sets an AzureMetadata's or AWSMetadata's Ready condition
// from its others, so that every tagsync kind reports Ready: False with the
// reason and message of the first condition in requestNotReady that says
// so (the message names it), else True with Applied's.
func setRequestReady(conds *[]metav1.Condition, gen int64) {
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonApplied,
		Message: "the request is carried out", ObservedGeneration: gen}
	for _, nr := range requestNotReady {
		if c := meta.FindStatusCondition(*conds, nr.typ); c != nil && c.Status == nr.status {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, c.Reason, notify.Fit(nr.typ+"="+string(c.Status)+": "+c.Message)
			break
		}
	}
	if c := meta.FindStatusCondition(*conds, v1alpha1.ConditionApplied); ready.Status == metav1.ConditionTrue && c != nil {
		ready.Reason, ready.Message = c.Reason, c.Message
	}
	meta.SetStatusCondition(conds, ready)
}

// setApplied sets the Applied condition from the counts.
func (o *outcome) setApplied(set func(string, bool, string, string)) {
	switch {
	case o.matched == 0:
		set(v1alpha1.ConditionApplied, true, ReasonNoResources, "no resource carries a classifier tag of the CloudMetadata")
	case o.pending > 0:
		set(v1alpha1.ConditionApplied, false, v1alpha1.ReasonSuspended, fmt.Sprintf("%d of %d matched resource(s) do not carry the request and are not written: %s is suspended",
			o.pending, o.matched, o.suspended))
	case o.failed() == 0:
		set(v1alpha1.ConditionApplied, true, ReasonApplied, fmt.Sprintf("all %d matched resource(s) carry the request", o.matched))
	default:
		set(v1alpha1.ConditionApplied, false, ReasonPartiallyApplied, fmt.Sprintf("%d of %d matched resource(s) do not carry the whole request (see failures)",
			o.failed(), o.matched))
	}
}

// activeList is the tag list a target owns: the requested tags under add
// and update, none under delete.
func activeList(t *target) map[string]string {
	if t.opcode == v1alpha1.OpcodeDelete || len(t.resourceTags) == 0 {
		return nil
	}
	return map[string]string(tags.Set(t.resourceTags).Clone())
}

// cloudMetadataStatus is the CloudMetadata's new status: Ready and the
// counts over all its targets.
func (p *pass) cloudMetadataStatus(problems []refProblem, outcomes []*outcome, now metav1.Time) v1alpha1.CloudMetadataStatus {
	s := *p.cm.Status.DeepCopy()
	s.ObservedGeneration, s.LastSyncTime = p.cm.Generation, &now
	s.LastSyncRequest = p.cm.Annotations[v1alpha1.SyncRequestAnnotation]
	s.Matched, s.InSync, s.Failed = 0, 0, 0
	for _, o := range outcomes {
		s.Matched += int32(o.matched)
		s.InSync += int32(o.inSync)
		s.Failed += int32(o.failed())
	}
	if len(problems) == 0 {
		p.safetyStatus(&s)
	}
	ready, reason, msg := p.readiness(problems, outcomes)
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: kit.ConditionStatus(ready), Reason: reason,
		Message: notify.Fit(msg), ObservedGeneration: p.cm.Generation})
	if p.health != nil {
		meta.SetStatusCondition(&s.Conditions, kit.EventsCondition(*p.health, p.every, p.cm.Generation))
	}
	return s
}

// readiness is the Ready condition: broken references first, then invalid
// requests, then suspension, then requests that could not be carried out,
// then deletions waiting for approval, then resources out of sync.
func (p *pass) readiness(problems []refProblem, outcomes []*outcome) (bool, string, string) {
	if len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, pr := range problems {
			msgs[i] = pr.message
		}
		return false, problems[0].reason, strings.Join(msgs, "; ")
	}
	for _, check := range []func([]*outcome) *condition{invalidRequest, suspension, failedRequest, p.waitingForApproval} {
		if c := check(outcomes); c != nil {
			return false, c.reason, c.message
		}
	}
	matched, failed := 0, 0
	for _, o := range outcomes {
		matched, failed = matched+o.matched, failed+o.failed()
	}
	if failed > 0 {
		return false, ReasonPartiallyApplied, fmt.Sprintf("%d of %d matched resource(s) do not carry the whole request (see the failures in the status of the objects referenced)", failed, matched)
	}
	return true, ReasonApplied, fmt.Sprintf("the requests are applied to all %d matched resource(s)", matched)
}

// invalidRequest is the first request that breaks its cloud's rules.
func invalidRequest(outcomes []*outcome) *condition {
	for _, o := range outcomes {
		if o.invalid != nil {
			return &condition{ReasonInvalidTags, fmt.Sprintf("%s: the request breaks the %s tag rules: %s", o.t.key(), o.t.cloud, joinErrs(o.invalid))}
		}
	}
	return nil
}

// failedRequest is the first request that could not be carried out.
func failedRequest(outcomes []*outcome) *condition {
	for _, o := range outcomes {
		if o.request != nil {
			return &condition{o.request.reason, o.t.key() + ": " + o.request.message}
		}
	}
	return nil
}

// limitOf is the CloudMetadata's limit policy, defaulted.
func limitOf(cm *v1alpha1.CloudMetadata) v1alpha1.LimitPolicy {
	if cm.Spec.ControllerConfig.Limit == "" {
		return v1alpha1.LimitPartial
	}
	return cm.Spec.ControllerConfig.Limit
}

// joinErrs renders errors.Join'ed errors on one line.
func joinErrs(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// auditFailing sets the AuditFailing condition: true while the sink
// fails, false once it works again (absent until it first failed).
func (o *outcome) auditFailing(conds []metav1.Condition, set func(string, bool, string, string)) {
	switch {
	case o.auditErr != nil:
		set(v1alpha1.ConditionAuditFailing, true, ReasonAuditSinkFailing,
			"the audit log cannot take records; no cloud mutation is made until it can (tagsync run --audit-fail-open goes on without): "+o.auditErr.Error())
	case meta.FindStatusCondition(conds, v1alpha1.ConditionAuditFailing) != nil:
		set(v1alpha1.ConditionAuditFailing, false, ReasonAuditSinkWorking, "the audit log takes records")
	}
}

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
