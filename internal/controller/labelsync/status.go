package labelsync

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
)

// waitOrder is the order of status.waiting.
var waitOrder = []v1alpha1.WaitReason{v1alpha1.WaitNoConsumer, v1alpha1.WaitNoMachine, v1alpha1.WaitNoNodeRef, v1alpha1.WaitClusterUnreachable}

// profileStatus is the profile's new status after the pass.
func (p *pass) profileStatus() v1alpha1.LabelSyncProfileStatus {
	prof, o := p.src.profile, &p.out
	s := *prof.Status.DeepCopy()
	s.ObservedGeneration = prof.Generation
	s.LastSyncRequest = prof.Annotations[v1alpha1.SyncRequestAnnotation]
	s.HostsMatched, s.NodesInSync, s.HostsPaused = int32(o.matched), int32(o.inSync), int32(o.paused)
	s.HostsWaiting = int32(p.waitingCount())
	s.Waiting = nil
	for _, why := range waitOrder {
		hosts := o.waiting[why]
		if len(hosts) == 0 {
			continue
		}
		sort.Strings(hosts)
		s.Waiting = append(s.Waiting, v1alpha1.WaitingHosts{Reason: why, Count: int32(len(hosts)),
			Hosts: hosts[:min(len(hosts), v1alpha1.MaxWaitingExamples)]})
	}
	sort.Slice(o.problems, func(i, j int) bool { return o.problems[i].Host < o.problems[j].Host })
	s.Problems, s.MoreProblems = nil, 0
	if n := len(o.problems); n > v1alpha1.MaxHostProblems {
		s.Problems, s.MoreProblems = o.problems[:v1alpha1.MaxHostProblems], int32(n-v1alpha1.MaxHostProblems)
	} else if n > 0 {
		s.Problems = o.problems
	}
	ready, reason, msg := p.readiness()
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: kit.ConditionStatus(ready),
		Reason: reason, Message: notify.Fit(msg), ObservedGeneration: prof.Generation})
	meta.SetStatusCondition(&s.Conditions, p.conflictCondition())
	s.LabelsRetained, s.Pending, s.DeletionsHeld = int32(len(o.retained)), nil, nil
	if o.held != nil && !o.approved {
		s.DeletionsHeld = o.held
	}
	if p.src.suspended && o.pending.Nodes > 0 {
		s.Pending = o.pending.DeepCopy()
	}
	meta.SetStatusCondition(&s.Conditions, p.suspendedCondition())
	meta.SetStatusCondition(&s.Conditions, p.deletionsHeldCondition())
	p.stampSyncTime(&s)
	return s
}

// stampSyncTime sets lastSyncTime to the pass's start when anything else
// in the status changed or a resync interval has passed since it was last
// set, so a steady profile's status is not rewritten by every pass. The
// stamp kept is remembered: next schedules a pass by the time it turns an
// interval old.
func (p *pass) stampSyncTime(s *v1alpha1.LabelSyncProfileStatus) {
	prev := p.src.profile.Status
	last := s.LastSyncTime
	s.LastSyncTime = prev.LastSyncTime
	if last != nil && p.started.Sub(last.Time) < p.src.resync && equality.Semantic.DeepEqual(*s, prev) {
		p.stamp = last.Time
		return
	}
	t := metav1.NewTime(p.started.Truncate(time.Second))
	s.LastSyncTime = &t
	p.stamp = t.Time
}

// readiness is the Ready condition: unreachable clusters first, then
// Nodes that could not be written, else in sync.
func (p *pass) readiness() (bool, string, string) {
	o := &p.out
	if n := len(o.unreachable); n > 0 {
		var names []string
		for c := range o.unreachable {
			names = append(names, fmt.Sprintf("%s: %s", c, p.r.clusterCause(c)))
		}
		sort.Strings(names)
		return false, ReasonClusterUnreachable, fmt.Sprintf("%d workload cluster(s) could not be reached (%s); %d host(s) wait for them and are retried with backoff",
			n, notify.Summary(names, shownInNotes), len(o.waiting[v1alpha1.WaitClusterUnreachable]))
	}
	if len(o.problems) > 0 {
		return false, ReasonNodesNotSynced, fmt.Sprintf("%d of %d matched host(s) could not be synced (see problems)", len(o.problems), o.matched)
	}
	if p.src.suspended && o.pending.Nodes > 0 {
		return false, v1alpha1.ReasonSuspended, fmt.Sprintf("the profile is suspended: %s; %d of %d matched host(s) have their labels on their Node",
			describePending(o.pending), o.inSync, o.matched)
	}
	return true, ReasonInSync, fmt.Sprintf("%d of %d matched host(s) have their labels on their Node; %d paused, %d waiting for a Node",
		o.inSync, o.matched, o.paused, p.waitingCount())
}

// conflictCondition is the Conflict condition: true while hosts of the
// profile hold back keys another host of the same Node wants otherwise.
func (p *pass) conflictCondition() metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionConflict, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoConflict,
		Message: "no host shares a Node with another host that wants other values for its keys", ObservedGeneration: p.src.profile.Generation}
	if n := len(p.out.conflicts); n > 0 {
		sort.Strings(p.out.conflicts)
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonContestedKeys
		shown := strings.Join(p.out.conflicts[:min(n, shownInNotes)], "; ")
		if n > shownInNotes {
			shown += fmt.Sprintf("; and %d more", n-shownInNotes)
		}
		c.Message = notify.Fit(fmt.Sprintf("%d host(s) share a Node with another host that wants other values; the contested keys are not written: %s",
			n, shown))
	}
	return c
}

// suspendedCondition is the Suspended condition: true while spec.suspend
// is set, saying what the pass would have written.
func (p *pass) suspendedCondition() metav1.Condition {
	gen := p.src.profile.Generation
	if !p.src.suspended {
		return metav1.Condition{Type: v1alpha1.ConditionSuspended, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNotSuspended,
			Message: "Node labels are written", ObservedGeneration: gen}
	}
	return metav1.Condition{Type: v1alpha1.ConditionSuspended, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSuspended,
		Message: notify.Fit("spec.suspend is set: hosts and Nodes are read and reported, nothing is written (" + describePending(p.out.pending) +
			"); unset it to resume"), ObservedGeneration: gen}
}

// describePending says what a suspended pass would have written.
func describePending(w v1alpha1.PendingLabelWrites) string {
	if w.Nodes == 0 {
		return "no Node would be written"
	}
	return fmt.Sprintf("%d Node(s) would be written: %d label(s) set, %d removed, %d pending taint(s) removed",
		w.Nodes, w.LabelsSet, w.LabelsRemoved, w.TaintsRemoved)
}

// deletionsHeldCondition is the DeletionsHeld condition: true while
// deletionPolicy Retain keeps labels the sync would have removed.
func (p *pass) deletionsHeldCondition() metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionDeletionsHeld, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoneHeld,
		Message: "no label the sync would remove is kept", ObservedGeneration: p.src.profile.Generation}
	if h := p.out.held; h != nil && !p.out.approved {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonMassDeletion, notify.Fit(heldMessage(p.src, h))
		return c
	}
	if n := len(p.out.retained); n > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonRetained
		c.Message = notify.Fit(retainedNote(p.out.retained) + "; set deletionPolicy Delete to remove them, or remove them yourself")
	}
	return c
}

// retainedNote names the labels deletionPolicy Retain kept (sorted).
func retainedNote(retained []string) string {
	sort.Strings(retained)
	return fmt.Sprintf("deletionPolicy is Retain: %d in-scope label(s) the sync would have removed are kept: %s",
		len(retained), notify.Summary(retained, shownInNotes))
}

// notReadyStatus is the status of a profile that cannot be served at all.
func notReadyStatus(prof *v1alpha1.LabelSyncProfile, reason, msg string, now time.Time) v1alpha1.LabelSyncProfileStatus {
	s := *prof.Status.DeepCopy()
	s.ObservedGeneration = prof.Generation
	s.LastSyncRequest = prof.Annotations[v1alpha1.SyncRequestAnnotation]
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: reason, Message: notify.Fit(msg), ObservedGeneration: prof.Generation, LastTransitionTime: metav1.NewTime(now)})
	return s
}

// writeProfileStatus patches the profile's status, with what st remembers
// of recent writes, unless it is unchanged.
func (r *Reconciler) writeProfileStatus(ctx context.Context, src *source, st *state, s v1alpha1.LabelSyncProfileStatus) error {
	prof := src.profile
	before := prof.DeepCopy()
	s.RecentWrites = st.recent.Status(r.Now())
	prof.Status = s
	return r.PatchStatus(ctx, prof, before)
}
