package nodetags

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
)

// outcome is what a pass found and did, for status, metrics and logs. The
// counters Node writes touch are guarded by mu (they run in parallel); the
// rest is written by the pass's own goroutine.
type outcome struct {
	mu                        sync.Mutex
	synced, unmanaged, errors int
	claimed                   int // nodes an older NodeTagSync syncs
	inFlight                  int // nodes whose last write the cache has not shown yet
	pending                   int // nodes kept tainted as pending because they cannot be synced
	cloudWrites, nodeWrites   int
	conflicts                 []v1alpha1.TagConflict
	skipped                   []v1alpha1.SkippedTag
	wipes                     int
	restored                  int
	held                      held // what the pass held back from its cloud writes
	retainedLabels            int  // label deletions kept (deletionPolicy Retain)
	suspendedNodes            int  // Node writes a suspended pass did not make
	firstError                string
	errs                      []error
	// notYet counts the unmanaged nodes whose resource the cloud does not
	// show yet but may shortly (Placement.NotYet).
	notYet int
	// memberErrors counts the members (an Auto Scaling group's instances)
	// that could not be given their shared resource's tags.
	memberErrors int
}

// memberWritten counts a member written (a cloud write).
func (o *outcome) memberWritten() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cloudWrites++
}

// memberFailed counts a member whose write failed.
func (o *outcome) memberFailed(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.memberErrors++
	if o.firstError == "" {
		o.firstError = err.Error()
	}
	if len(o.errs) < maxListed {
		o.errs = append(o.errs, err)
	}
}

// fail counts a node that could not be synced.
func (o *outcome) fail(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.errors++
	if o.firstError == "" {
		o.firstError = err.Error()
	}
	if len(o.errs) < maxListed {
		o.errs = append(o.errs, err)
	}
}

// err joins the (first maxListed) errors of the pass.
func (o *outcome) err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return errors.Join(o.errs...)
}

// nodeSynced counts a node that needed no write; it is synced unless its
// resource's cloud write failed (then that failure already counted it).
func (o *outcome) nodeSynced(cloudOK bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cloudOK {
		o.synced++
	}
}

// nodeWritten counts a successful Node write.
func (o *outcome) nodeWritten(cloudOK bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nodeWrites++
	if cloudOK {
		o.synced++
	}
}

// nodeInFlight counts a Node whose write met a newer version.
func (o *outcome) nodeInFlight() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.inFlight++
}

// addSkipped lists a tag or label that could not be carried across.
func (o *outcome) addSkipped(s v1alpha1.SkippedTag) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.skipped = append(o.skipped, s)
}

// nodeSuspended counts a Node a suspended pass would have written (it is
// not in sync).
func (o *outcome) nodeSuspended() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.suspendedNodes++
}

// nodeRetained counts label deletions deletionPolicy Retain kept.
func (o *outcome) nodeRetained(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.retainedLabels += n
}

// record publishes the pass's gauges.
func (o *outcome) record(name string) {
	nodesGauge.WithLabelValues(name, "synced").Set(float64(o.synced))
	nodesGauge.WithLabelValues(name, "unmanaged").Set(float64(o.unmanaged))
	nodesGauge.WithLabelValues(name, "error").Set(float64(o.errors))
	nodesGauge.WithLabelValues(name, "pending").Set(float64(o.pending))
	conflictsGauge.WithLabelValues(name).Set(float64(len(o.conflicts)))
	unrepresentableGauge.WithLabelValues(name).Set(float64(len(o.skipped)))
	wipesTotal.WithLabelValues(name).Add(float64(o.wipes))
	restoredTotal.WithLabelValues(name).Add(float64(o.restored))
	deletionsHeldGauge.WithLabelValues(name).Set(float64(o.heldCount()))
	retainedGauge.WithLabelValues(name).Set(float64(o.held.retained + o.retainedLabels))
	if o.held.approved {
		approvalsTotal.WithLabelValues(name).Inc()
	}
}

// heldCount is the number of tag deletions the pass held for approval.
func (o *outcome) heldCount() int {
	if o.held.approved {
		return 0
	}
	return o.held.mass.Count()
}

// nodeStates are the values of the nodes gauge's state label.
var nodeStates = []string{"synced", "unmanaged", "error", "pending"}

// maxListed bounds the conflict and unrepresentable lists in the status.
const maxListed = 50

// status renders the pass as the NodeTagSync's status. last is the status
// this controller last wrote (nil: unknown): the cached nts may not show it
// yet, and a lastFullSyncTime it set must not be written away by the next
// pass, which reads no fresh state of its own.
func (o *outcome) status(nts *v1alpha1.NodeTagSync, last *v1alpha1.NodeTagSyncStatus, cfg syncConfig, failed []cloud.ScopeError, fresh bool, at time.Time) v1alpha1.NodeTagSyncStatus {
	st := *nts.Status.DeepCopy()
	if last != nil && last.LastFullSyncTime != nil && (st.LastFullSyncTime == nil || st.LastFullSyncTime.Before(last.LastFullSyncTime)) {
		st.LastFullSyncTime = last.LastFullSyncTime.DeepCopy()
	}
	st.ObservedGeneration = nts.Generation
	st.LastSyncRequest = nts.Annotations[v1alpha1.SyncRequestAnnotation]
	st.SyncedNodes = int32(o.synced)
	st.UnmanagedNodes = int32(o.unmanaged + o.claimed)
	st.ConflictCount = int32(len(o.conflicts))
	st.ErrorCount = int32(o.errors)
	st.Conflicts = sortedConflicts(o.conflicts)
	st.Unrepresentable = sortedSkipped(o.skipped)
	if fresh && o.errors == 0 && o.memberErrors == 0 {
		t := metav1.NewTime(at)
		st.LastFullSyncTime = &t
	}
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Synced",
		Message: o.summary(cfg)}
	degraded := metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: "NoErrors",
		Message: "every in-scope node was synced"}
	if o.errors > 0 {
		reason := "SyncErrors"
		if len(failed) > 0 {
			reason = "CloudReadFailed"
		}
		ready.Status, ready.Reason = metav1.ConditionFalse, reason
		degraded.Status, degraded.Reason = metav1.ConditionTrue, reason
		degraded.Message = fmt.Sprintf("%d nodes could not be synced; first error: %s", o.errors, o.firstError)
		if len(failed) > 0 {
			degraded.Message = fmt.Sprintf("could not read %s; %s", scopes(failed), degraded.Message)
		}
		if wait, ok := cloud.RetryAfter(o.err()); ok {
			reason = "Throttled"
			ready.Reason, degraded.Reason = reason, reason
			degraded.Message = fmt.Sprintf("throttled by the cloud: the next pass waits %s as the cloud asked; %s",
				wait.Round(time.Second), degraded.Message)
		}
		ready.Message = degraded.Message + "; " + ready.Message
	} else if o.memberErrors > 0 {
		// The nodes are synced; some group instances lack the group's tags.
		degraded.Status, degraded.Reason = metav1.ConditionTrue, "InstanceTagsFailed"
		degraded.Message = fmt.Sprintf("%d instances could not be given their group's tags; first error: %s", o.memberErrors, o.firstError)
	}
	st.DeletionsHeld, st.RetainedDeletions = nil, int32(o.held.retained+o.retainedLabels)
	heldCond := metav1.Condition{Type: v1alpha1.ConditionDeletionsHeld, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonNoneHeld, Message: "no deletion was held back"}
	switch {
	case o.held.record != nil && !o.held.approved:
		st.DeletionsHeld = o.held.record
		heldCond.Status, heldCond.Reason, heldCond.Message = metav1.ConditionTrue, v1alpha1.ReasonMassDeletion, heldMessage(nts, o.held.record)
		if ready.Status == metav1.ConditionTrue {
			ready.Status, ready.Reason = metav1.ConditionFalse, v1alpha1.ConditionDeletionsHeld
		}
		ready.Message = fmt.Sprintf("%d tag deletions wait for approval (see the DeletionsHeld condition); %s", o.held.record.Count, ready.Message)
	case st.RetainedDeletions > 0:
		heldCond.Status, heldCond.Reason = metav1.ConditionTrue, v1alpha1.ReasonRetained
		heldCond.Message = fmt.Sprintf("deletionPolicy Retain kept %d tags (%d cloud tags, %d labels) that the sync would have deleted",
			st.RetainedDeletions, o.held.retained, o.retainedLabels)
	}
	suspended := metav1.Condition{Type: v1alpha1.ConditionSuspended, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonNotSuspended, Message: "passes write"}
	if cfg.suspend {
		suspended.Status, suspended.Reason = metav1.ConditionTrue, v1alpha1.ReasonSuspended
		suspended.Message = fmt.Sprintf("spec.suspend is set: nothing is written; the last pass would have written %d cloud resources and %d Nodes",
			o.held.suspendedWrites, o.suspendedNodes)
		if ready.Status == metav1.ConditionTrue {
			ready.Status, ready.Reason = metav1.ConditionFalse, v1alpha1.ReasonSuspended
		}
		ready.Message = "suspended: " + ready.Message
	}
	setConditions(&st, nts.Generation, ready, degraded, heldCond, suspended)
	return st
}

// summary is the Ready message: the counts of the status, in words.
func (o *outcome) summary(cfg syncConfig) string {
	msg := fmt.Sprintf("%d nodes in sync, %d unmanaged, %d conflicts", o.synced, o.unmanaged+o.claimed, len(o.conflicts))
	if o.claimed > 0 {
		msg += fmt.Sprintf("; %d of the unmanaged are synced by an older NodeTagSync that also selects them", o.claimed)
	}
	if o.pending > 0 {
		msg += fmt.Sprintf("; %d nodes keep the %s taint because they cannot be synced", o.pending, v1alpha1.NodeTagsPendingTaintKey)
	}
	for _, w := range cfg.warnings {
		msg += "; " + w
	}
	return msg
}

// scopes names the failed scopes: "resource group a (...), resource group b".
func scopes(failed []cloud.ScopeError) string {
	names := make([]string, len(failed))
	for i, f := range failed {
		names[i] = f.Scope
	}
	return notify.Summary(names, 5)
}

// invalidStatus reports a spec the controller cannot use.
func invalidStatus(nts *v1alpha1.NodeTagSync, err error) v1alpha1.NodeTagSyncStatus {
	return failedStatus(nts, "InvalidSpec", "the spec is invalid: "+err.Error())
}

// readFailedStatus reports a cloud read that failed; nothing was written.
func readFailedStatus(nts *v1alpha1.NodeTagSync, err error) v1alpha1.NodeTagSyncStatus {
	if wait, ok := cloud.RetryAfter(err); ok {
		return failedStatus(nts, "Throttled", fmt.Sprintf("throttled by the cloud: the next pass waits %s as the cloud asked; nothing was written: %v",
			wait.Round(time.Second), err))
	}
	return failedStatus(nts, "CloudReadFailed", "reading the cloud failed, nothing was written: "+err.Error())
}

// failedStatus marks a pass that could not run: not Ready, Degraded, with the
// counts of the last pass that did run left as they were.
func failedStatus(nts *v1alpha1.NodeTagSync, reason, msg string) v1alpha1.NodeTagSyncStatus {
	st := *nts.Status.DeepCopy()
	st.ObservedGeneration = nts.Generation
	st.LastSyncRequest = nts.Annotations[v1alpha1.SyncRequestAnnotation]
	setConditions(&st, nts.Generation,
		metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg},
		metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
	return st
}

func setConditions(st *v1alpha1.NodeTagSyncStatus, gen int64, conds ...metav1.Condition) {
	for _, c := range conds {
		c.ObservedGeneration = gen
		if len(c.Message) > 32768 {
			c.Message = c.Message[:32768]
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
}

// writeStatus updates the status subresource only when it changed, so an
// unchanged cluster costs no API writes (kit's Base.PatchStatus: judged
// against the cache once it shows our last write, and guarded by the
// resourceVersion), and remembers it as the status this controller last
// wrote.
func (r *Reconciler) writeStatus(ctx context.Context, nts *v1alpha1.NodeTagSync, st v1alpha1.NodeTagSyncStatus, state *syncState) error {
	orig := nts.DeepCopy()
	st.RecentWrites = state.recent.Status(r.Now())
	nts.Status = st
	if err := r.PatchStatus(ctx, nts, orig); err != nil {
		r.rememberStatus(state, nil)
		return err
	}
	r.rememberStatus(state, st.DeepCopy())
	return nil
}

// rememberStatus records the status this controller last wrote (nil:
// unknown). Only the object's reconcile writes it, but it is read under mu
// from elsewhere (canTarget's callers, tests), so it is written under mu.
func (r *Reconciler) rememberStatus(state *syncState, st *v1alpha1.NodeTagSyncStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	state.lastStatus = st
}

// sortedConflicts orders conflicts by resource and tag, and keeps the
// first maxListed.
func sortedConflicts(in []v1alpha1.TagConflict) []v1alpha1.TagConflict {
	return firstSorted(in, func(a, b v1alpha1.TagConflict) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(strings.ToLower(a.Tag), strings.ToLower(b.Tag)))
	})
}

// sortedSkipped orders skipped tags by object and name, and keeps the
// first maxListed.
func sortedSkipped(in []v1alpha1.SkippedTag) []v1alpha1.SkippedTag {
	return firstSorted(in, func(a, b v1alpha1.SkippedTag) int {
		return cmp.Or(cmp.Compare(a.Object, b.Object), cmp.Compare(a.Name, b.Name))
	})
}

// firstSorted sorts in by compare and keeps the first maxListed.
func firstSorted[T any](in []T, compare func(a, b T) int) []T {
	slices.SortFunc(in, compare)
	return in[:min(len(in), maxListed)]
}

// writePassStatus renders a full pass as the NodeTagSync's status (with
// the Events condition) and writes it.
func (p *pass) writePassStatus(ctx context.Context, fresh bool, failed []cloud.ScopeError) error {
	st := p.out.status(p.nts, p.st.lastStatus, p.cfg, failed, fresh, p.start)
	p.setEventsCondition(&st)
	return p.r.writeStatus(ctx, p.nts, st, p.st)
}

// setEventsCondition reports in st whether events drive the passes (the
// Events condition), or removes it when events are off.
func (p *pass) setEventsCondition(st *v1alpha1.NodeTagSyncStatus) {
	if p.health == nil {
		return
	}
	setConditions(st, p.nts.Generation, kit.EventsCondition(*p.health, p.cfg.resync, p.nts.Generation))
}
