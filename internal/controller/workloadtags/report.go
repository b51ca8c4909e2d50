package workloadtags

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
)

// tally is a pass's outcome, counted.
type tally struct {
	resources, inSync, pending, shared, failed, written int
	// contested names, per rival policy, the keys it contests.
	contested map[string][]string
	// skipped and failures describe resources for events.
	skipped, failures []string
	// wait is the longest wait a throttled write asked for.
	wait time.Duration
	// fights are the keys the pass stopped putting back.
	fights []fight
}

// tallyOf counts the plans and the write's results.
func tallyOf(plans []resourcePlan, results map[string]error, suspended bool) tally {
	t := tally{contested: map[string][]string{}}
	for _, rp := range plans {
		for k, rival := range rp.contested {
			if !slices.Contains(t.contested[rival], k) {
				t.contested[rival] = append(t.contested[rival], k)
			}
		}
		switch rp.state {
		case stateShared:
			t.shared++
			continue
		case statePending:
			t.pending++
			continue
		case stateUnread:
			t.resources++
			t.failed++
			continue
		}
		t.resources++
		if len(rp.skipped) > 0 {
			t.skipped = append(t.skipped, fmt.Sprintf("%s: %s", rp.source, rp.skipped[0].Err))
		}
		err, wrote := results[cloud.CanonicalID(rp.id)]
		switch {
		case len(rp.fought) > 0 && rp.patch.IsEmpty():
		case rp.patch.IsEmpty() && len(rp.skipped) == 0:
			t.inSync++
		case wrote && err == nil && len(rp.skipped) == 0:
			t.inSync++
			t.written++
		case wrote && err != nil:
			t.failed++
			t.failures = append(t.failures, fmt.Sprintf("%s: %v", rp.source, err))
			if d, ok := cloud.RetryAfter(err); ok {
				t.wait = max(t.wait, d)
			}
		case wrote:
			t.written++
		}
	}
	if suspended {
		t.written = 0
	}
	return t
}

// report writes the pass's outcome to the status, events and metrics, and
// says when to run again: soon while a resource is pending (within
// pendingPatience of first being missed) or a write was throttled, else
// at the policy's interval.
func (p *pass) report(ctx context.Context, plans []resourcePlan, rd reading, results map[string]error, fights []fight) (reconcile.Result, error) {
	t := tallyOf(plans, results, p.cfg.suspend)
	t.fights = fights
	soon := p.trackPending(plans)
	for _, f := range rd.cloud.Failed {
		t.failures = append(t.failures, fmt.Sprintf("%s: %v", f.Scope, f.Err))
	}
	p.notify(t)
	p.observe(t)
	ready := len(t.contested) == 0 && len(t.fights) == 0 && t.pending == 0 && t.failed == 0 && t.inSync == t.resources && len(rd.cloud.Failed) == 0
	reason, msg := ReasonTagged, fmt.Sprintf("%d resources carry every tag the policy asks", t.resources)
	switch {
	case t.resources == 0 && t.pending == 0:
		reason, msg = ReasonNoResources, fmt.Sprintf("no selected workload has a resource on %s", p.cfg.provider)
		if t.shared > 0 {
			msg += fmt.Sprintf(" that is its own (%d shared ones are not tagged per workload)", t.shared)
		}
	case !ready:
		reason, msg = ReasonPartiallyTagged, partialMessage(t)
	}
	if p.cfg.suspend {
		ready, reason = false, v1alpha1.ReasonSuspended
		msg = "suspended: nothing is written; " + msg
	}
	p.setStatus(t, ready, reason, msg)
	p.setConflict(t)
	p.obj.Status.RecentWrites = recentWrites(p.st.writes, p.r.Now())
	if p.health != nil {
		meta.SetStatusCondition(&p.obj.Status.Conditions, kit.EventsCondition(*p.health, p.every, p.obj.Generation))
	}
	passesTotal.WithLabelValues(resultOf(ready, t)).Inc()
	p.st.notes.EndPass(len(rd.cloud.Failed) == 0)
	if err := p.r.PatchStatus(ctx, p.obj, p.before); err != nil {
		return reconcile.Result{}, err
	}
	p.st.backoff.Reset()
	switch {
	case t.wait > 0:
		return reconcile.Result{RequeueAfter: t.wait}, nil
	case soon || t.failed > 0:
		return reconcile.Result{RequeueAfter: pendingRetry}, nil
	}
	return reconcile.Result{RequeueAfter: p.every}, nil
}

// trackPending records when each pending resource was first missed and
// reports whether one is still within pendingPatience.
func (p *pass) trackPending(plans []resourcePlan) bool {
	now, soon := p.r.Now(), false
	seen := map[string]bool{}
	for _, rp := range plans {
		if rp.state != statePending {
			continue
		}
		key := cloud.CanonicalID(rp.id)
		if rp.id == "" {
			key = rp.source
		}
		seen[key] = true
		since, ok := p.st.pendingSince[key]
		if !ok {
			since = now
			p.st.pendingSince[key] = now
		}
		soon = soon || now.Sub(since) < pendingPatience
	}
	for key := range p.st.pendingSince {
		if !seen[key] {
			delete(p.st.pendingSince, key)
		}
	}
	return soon
}

// partialMessage says why not every resource is in sync.
func partialMessage(t tally) string {
	parts := []string{fmt.Sprintf("%d of %d resources carry every tag the policy asks", t.inSync, t.resources)}
	if t.pending > 0 {
		parts = append(parts, fmt.Sprintf("%d not in the cloud yet", t.pending))
	}
	if t.failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed (%s)", t.failed, notify.Summary(t.failures, 2)))
	}
	if len(t.skipped) > 0 {
		parts = append(parts, fmt.Sprintf("tags left out on %d (%s)", len(t.skipped), notify.Summary(t.skipped, 2)))
	}
	if len(t.contested) > 0 {
		parts = append(parts, "keys contested by other policies are not written (see Conflict)")
	}
	if len(t.fights) > 0 {
		parts = append(parts, fmt.Sprintf("%d keys another writer keeps taking away are no longer put back (see Conflict)", len(t.fights)))
	}
	return strings.Join(parts, "; ")
}

// setStatus fills the status: counts, Ready and Suspended.
func (p *pass) setStatus(t tally, ready bool, reason, msg string) {
	s := &p.obj.Status
	prev := s.DeepCopy()
	s.Resources, s.InSync, s.Pending = int32(t.resources), int32(t.inSync), int32(t.pending)
	s.Shared, s.Failed = int32(t.shared), int32(t.failed)
	s.ObservedGeneration = p.obj.Generation
	s.LastSyncRequest = p.obj.Annotations[v1alpha1.SyncRequestAnnotation]
	p.condition(v1alpha1.ConditionReady, ready, reason, msg)
	susp, sreason := metav1.ConditionFalse, v1alpha1.ReasonNotSuspended
	if p.cfg.suspend {
		susp, sreason = metav1.ConditionTrue, v1alpha1.ReasonSuspended
	}
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionSuspended, Status: susp, Reason: sreason,
		Message:            map[bool]string{true: "spec.suspend is set: nothing is written", false: "writes are on"}[p.cfg.suspend],
		ObservedGeneration: p.obj.Generation})
	now := metav1.NewTime(p.started.UTC().Truncate(time.Second))
	prev.LastSyncTime = nil
	cur := s.DeepCopy()
	cur.LastSyncTime = nil
	s.LastSyncTime = kit.StampSyncTime(s.LastSyncTime, &now, equalStatus(prev, cur), p.cfg.every)
}

// equalStatus compares two statuses without their condition times.
func equalStatus(a, b *v1alpha1.WorkloadTagPolicyStatus) bool {
	strip := func(s *v1alpha1.WorkloadTagPolicyStatus) {
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
	}
	strip(a)
	strip(b)
	return equality.Semantic.DeepEqual(a, b)
}

// condition sets a condition of the policy.
func (p *pass) condition(typ string, ok bool, reason, msg string) {
	meta.SetStatusCondition(&p.obj.Status.Conditions, metav1.Condition{Type: typ, Status: kit.ConditionStatus(ok),
		Reason: reason, Message: notify.Fit(msg), ObservedGeneration: p.obj.Generation})
}

// setConflict sets the Conflict condition: the rival policies and the keys
// each contests.
func (p *pass) setConflict(t tally) {
	if len(t.fights) > 0 {
		p.condition(v1alpha1.ConditionConflict, true, ReasonFighting, fightMessage(t.fights))
		return
	}
	if len(t.contested) == 0 {
		p.condition(v1alpha1.ConditionConflict, false, v1alpha1.ReasonNoConflict, "no other policy wants other values for these keys")
		return
	}
	p.condition(v1alpha1.ConditionConflict, true, v1alpha1.ReasonContestedKeys, conflictMessage(t.contested))
}

// fightMessage names the fights, the first few in full.
func fightMessage(fights []fight) string {
	descs := make([]string, len(fights))
	for i, f := range fights {
		descs[i] = f.String()
	}
	return fmt.Sprintf("another writer keeps changing or removing %d keys this policy put back %d times within %s; they are no longer written there: %s. "+
		"Make the other writer leave them (docs/workload-tags.md, coexistence), then set the %s annotation to a new value",
		len(fights), maxPutBacks, kit.RecentWindow, notify.Summary(descs, 3), v1alpha1.AcknowledgeFightsAnnotation)
}

// conflictMessage names each rival and its keys, sorted.
func conflictMessage(contested map[string][]string) string {
	rivals := make([]string, 0, len(contested))
	for r := range contested {
		rivals = append(rivals, r)
	}
	sort.Strings(rivals)
	parts := make([]string, len(rivals))
	for i, r := range rivals {
		keys := contested[r]
		sort.Strings(keys)
		parts[i] = fmt.Sprintf("WorkloadTagPolicy %s wants other values for %s", r, strings.Join(keys, ", "))
	}
	return strings.Join(parts, "; ") + ": neither writes those keys on the resources both select"
}

// notify emits the pass's events: what it wrote, and each problem once.
func (p *pass) notify(t tally) {
	n := p.st.notes
	if t.written > 0 {
		n.Normal(p.obj, ReasonWrote, fmt.Sprintf("wrote tags on %d resources", t.written))
	}
	if len(t.failures) > 0 {
		n.Once(p.obj, ReasonWriteFailed, ReasonWriteFailed, fmt.Sprintf("%d resources failed: %s", len(t.failures), notify.Summary(t.failures, 3)))
	}
	if len(t.skipped) > 0 {
		n.Once(p.obj, ReasonSkippedTags, ReasonSkippedTags, fmt.Sprintf("tags left out on %d resources: %s", len(t.skipped), notify.Summary(t.skipped, 3)))
	}
	if len(t.contested) > 0 {
		n.Once(p.obj, v1alpha1.ReasonContestedKeys, v1alpha1.ReasonContestedKeys, conflictMessage(t.contested))
	}
	for _, f := range t.fights {
		n.Once(p.obj, "fight/"+f.resource+"/"+f.key, ReasonFighting, fightMessage([]fight{f}))
	}
}

// observe sets the resources gauge.
func (p *pass) observe(t tally) {
	for state, v := range map[string]int{"found": t.resources, "in_sync": t.inSync, "pending": t.pending, "shared": t.shared, "failed": t.failed} {
		resourcesGauge.WithLabelValues(p.obj.Name, state).Set(float64(v))
	}
	fightsGauge.WithLabelValues(p.obj.Name).Set(float64(len(t.fights)))
}

// resultOf is a pass's result label.
func resultOf(ready bool, t tally) string {
	if ready {
		return "ok"
	}
	if t.resources > 0 && t.failed == t.resources {
		return "error"
	}
	return "partial"
}

// refused reports a policy that cannot be applied (an invalid spec, or a
// cloud tagsync runs without): Ready false, one event, and the next pass
// after a backoff or at once on a spec change.
func (p *pass) refused(ctx context.Context, err error) (reconcile.Result, error) {
	reason := ReasonInvalidSpec
	var pe *providerError
	if errors.As(err, &pe) {
		reason = ReasonProviderNotConfigured
	}
	return p.stopped(ctx, reason, err, p.st.backoff.Failed(fmt.Sprint(p.obj.Generation), p.obj.Spec.SyncInterval()))
}

// failed reports a pass whose read failed, retried after the cloud's wait
// or with the person backoff when the error needs a person.
func (p *pass) failed(ctx context.Context, err error) (reconcile.Result, error) {
	p.r.index.Pending.Restore(p.obj.Name, p.changed, false)
	wait := pendingRetry
	if d, ok := cloud.RetryAfter(err); ok {
		wait = d
	} else if kit.NeedsPerson(err) {
		wait = p.st.backoff.Failed(fmt.Sprint(p.obj.Generation), p.obj.Spec.SyncInterval())
	}
	return p.stopped(ctx, ReasonReadFailed, err, wait)
}

// stopped records a pass that wrote nothing: Ready false with reason and
// err, one Warning event, a log line (the event is once per error; the log
// is every pass), and the next pass after wait.
func (p *pass) stopped(ctx context.Context, reason string, err error, wait time.Duration) (reconcile.Result, error) {
	ctrllog.FromContext(ctx).Info("pass stopped, nothing written", "reason", reason, "error", err.Error(), "retryIn", wait.String())
	p.st.notes.Once(p.obj, reason+"/"+err.Error(), reason, err.Error())
	p.st.notes.EndPass(false)
	p.obj.Status.ObservedGeneration = p.obj.Generation
	p.obj.Status.LastSyncRequest = p.obj.Annotations[v1alpha1.SyncRequestAnnotation]
	p.condition(v1alpha1.ConditionReady, false, reason, err.Error())
	passesTotal.WithLabelValues("error").Inc()
	if perr := p.r.PatchStatus(ctx, p.obj, p.before); perr != nil {
		return reconcile.Result{}, perr
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}
