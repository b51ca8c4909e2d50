package nodetags

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// maxListed bounds the conflict and unrepresentable lists in the status.
const maxListed = 50

// outcome is what a pass found and did, for status, metrics and logs.
type outcome struct {
	synced, unmanaged, errors int
	claimed                   int // nodes an older NodeTagSync syncs
	inFlight                  int // nodes whose last write the cache has not shown yet
	cloudWrites, nodeWrites   int
	conflicts                 []v1alpha1.TagConflict
	skipped                   []v1alpha1.SkippedTag
	wipes                     int
	firstError                string
}

func (o *outcome) fail(err error) {
	o.errors++
	if o.firstError == "" {
		o.firstError = err.Error()
	}
}

// record publishes the pass's gauges.
func (o *outcome) record(name string) {
	nodesGauge.WithLabelValues(name, "synced").Set(float64(o.synced))
	nodesGauge.WithLabelValues(name, "unmanaged").Set(float64(o.unmanaged))
	nodesGauge.WithLabelValues(name, "error").Set(float64(o.errors))
	conflictsGauge.WithLabelValues(name).Set(float64(len(o.conflicts)))
	unrepresentableGauge.WithLabelValues(name).Set(float64(len(o.skipped)))
	wipesTotal.WithLabelValues(name).Add(float64(o.wipes))
}

// status renders the pass as the NodeTagSync's status.
func (o *outcome) status(nts *v1alpha1.NodeTagSync, fresh bool, at time.Time) v1alpha1.NodeTagSyncStatus {
	st := *nts.Status.DeepCopy()
	st.ObservedGeneration = nts.Generation
	st.SyncedNodes = int32(o.synced)
	st.UnmanagedNodes = int32(o.unmanaged + o.claimed)
	st.ConflictCount = int32(len(o.conflicts))
	st.ErrorCount = int32(o.errors)
	st.Conflicts = sortedConflicts(o.conflicts)
	st.Unrepresentable = sortedSkipped(o.skipped)
	if fresh && o.errors == 0 {
		t := metav1.NewTime(at)
		st.LastFullSyncTime = &t
	}
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Synced",
		Message: fmt.Sprintf("%d nodes in sync, %d unmanaged, %d conflicts", o.synced, o.unmanaged, len(o.conflicts))}
	if o.claimed > 0 {
		ready.Message += fmt.Sprintf("; %d selected nodes are synced by an older NodeTagSync and skipped here", o.claimed)
	}
	degraded := metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: "NoErrors",
		Message: "every in-scope node was synced"}
	if o.errors > 0 {
		ready.Status, ready.Reason = metav1.ConditionFalse, "SyncErrors"
		degraded.Status, degraded.Reason = metav1.ConditionTrue, "SyncErrors"
		degraded.Message = fmt.Sprintf("%d nodes could not be synced; first error: %s", o.errors, o.firstError)
	}
	setConditions(&st, nts.Generation, ready, degraded)
	return st
}

// invalidStatus reports a spec the controller cannot use.
func invalidStatus(nts *v1alpha1.NodeTagSync, err error) v1alpha1.NodeTagSyncStatus {
	return failedStatus(nts, "InvalidSpec", "the spec is invalid: "+err.Error())
}

// readFailedStatus reports a cloud read that failed; nothing was written.
func readFailedStatus(nts *v1alpha1.NodeTagSync, err error) v1alpha1.NodeTagSyncStatus {
	return failedStatus(nts, "CloudReadFailed", "reading the cloud failed, nothing was written: "+err.Error())
}

// failedStatus marks a pass that could not run: not Ready, Degraded, with the
// counts of the last pass that did run left as they were.
func failedStatus(nts *v1alpha1.NodeTagSync, reason, msg string) v1alpha1.NodeTagSyncStatus {
	st := *nts.Status.DeepCopy()
	st.ObservedGeneration = nts.Generation
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
// unchanged cluster costs no API writes.
func (r *Reconciler) writeStatus(ctx context.Context, nts *v1alpha1.NodeTagSync, st v1alpha1.NodeTagSyncStatus) error {
	if equality.Semantic.DeepEqual(nts.Status, st) {
		return nil
	}
	orig := nts.DeepCopy()
	nts.Status = st
	if err := r.Client.Status().Patch(ctx, nts, ctrl.MergeFrom(orig)); err != nil {
		return fmt.Errorf("updating status of NodeTagSync %s: %w", nts.Name, err)
	}
	return nil
}

func sortedConflicts(in []v1alpha1.TagConflict) []v1alpha1.TagConflict {
	sort.Slice(in, func(i, j int) bool {
		if in[i].Resource != in[j].Resource {
			return in[i].Resource < in[j].Resource
		}
		return strings.ToLower(in[i].Tag) < strings.ToLower(in[j].Tag)
	})
	if len(in) > maxListed {
		in = in[:maxListed]
	}
	return in
}

func sortedSkipped(in []v1alpha1.SkippedTag) []v1alpha1.SkippedTag {
	sort.Slice(in, func(i, j int) bool {
		if in[i].Object != in[j].Object {
			return in[i].Object < in[j].Object
		}
		return in[i].Name < in[j].Name
	})
	if len(in) > maxListed {
		in = in[:maxListed]
	}
	return in
}
