package metadata

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// A change of a resource an object's last discovery matched runs a
// targeted pass of the object: each changed resource is read once
// (cloud.ClassifiedReader: Azure, one GET) instead of a discovery, or not
// at all when its change carried its tags (AWS), planned
// and written as a full pass would (held tags, contests, audit). It falls
// back to a full pass, before writing anything, whenever the set of
// matched resources may have changed (a changed resource is gone or no
// longer carries a classifier) or anything but changes may have asked for
// the pass: a spec change of the object or of an object it references, a
// sync request, the polling interval, a contest that changed, an overflow,
// or a last full pass that did not complete. It also gives way to a full
// pass when it would read more resources than the last full pass's
// discovery took requests (and more than alwaysTargetedReads): a burst of changes across the estate is cheaper
// to discover again (Azure: a Resource Graph page holds 1000 resources)
// than to read one by one. The status and its counts are the full passes'.

// fullPass is what a state remembers of the last full pass.
type fullPass struct {
	// ok is set when it completed: every reference resolved, every
	// discovery complete, nothing failed.
	ok bool
	// at is when it started; spec and request what it served.
	at            time.Time
	spec, request string
	// calls is how many requests its discoveries took.
	calls int
	// approval is the approval annotation it saw: a new one needs a full
	// pass (the mass-deletion guard runs there).
	approval string
}

// doneFull records a full pass that ended with outcomes.
func (p *pass) doneFull(problems []refProblem, outcomes []*outcome) {
	ok, calls := len(problems) == 0, 0
	for _, o := range outcomes {
		ok = ok && o.request == nil && o.invalid == nil && !o.transient && !o.permanent && o.failed() == 0 && o.auditErr == nil
		calls += o.discoveryCalls
	}
	p.st.full = fullPass{ok: ok, at: p.started, spec: specKeyOf(p.cm, targetsOf(outcomes)),
		request: p.cm.Annotations[v1alpha1.SyncRequestAnnotation], calls: calls, approval: p.cm.Annotations[v1alpha1.ApproveDeletionsAnnotation]}
}

// targetsOf are the outcomes' targets.
func targetsOf(outcomes []*outcome) []*target {
	out := make([]*target, len(outcomes))
	for i, o := range outcomes {
		out[i] = o.t
	}
	return out
}

// canTarget reports whether a pass of the object may be targeted.
func (p *pass) canTarget(res resolved) bool {
	f := p.st.full
	return f.ok && len(res.problems) == 0 && p.r.Now().Before(f.at.Add(p.every)) &&
		f.request == p.cm.Annotations[v1alpha1.SyncRequestAnnotation] && f.spec == specKeyOf(p.cm, res.targets) &&
		f.approval == p.cm.Annotations[v1alpha1.ApproveDeletionsAnnotation]
}

// servedAlready reports a wake with nothing left to do: events are on, no
// change is pending and nothing asks for a full pass (the last one is
// good, current and not due). A burst of changes that arrives while the
// object's targeted pass runs enqueues it once more after the pass took
// them all; that wake must not cost a discovery.
func (p *pass) servedAlready(res resolved) bool {
	return p.health != nil && len(p.changed) == 0 && !p.fullNeeded && p.canTarget(res)
}

// alwaysTargetedReads is how many changed resources a targeted pass reads
// whatever a full pass would cost: a few reads take less time than a
// discovery of the whole scope, and read the resources as ARM has them
// now (Resource Graph follows ARM with a delay).
const alwaysTargetedReads = 10

// errFullPass says a targeted pass cannot serve the changes: a full pass
// must.
var errFullPass = errors.New("a full pass is needed")

// runTargeted is the targeted pass over the changed resources ids; it
// returns errFullPass, having written nothing, when a full pass must run
// instead.
func (p *pass) runTargeted(ctx context.Context, res resolved, ids []string) (reconcile.Result, error) {
	work, err := p.readChanged(ctx, res.targets, ids)
	if err != nil {
		if !errors.Is(err, errFullPass) {
			p.r.index.restore(p.key(), ids, false) // for the retry
		}
		return reconcile.Result{}, err
	}
	var planned []*targetPlan
	for _, w := range work {
		tp, err := p.planChanged(w)
		if err != nil {
			return reconcile.Result{}, err
		}
		if tp != nil {
			planned = append(planned, tp)
		}
	}
	p.write(ctx, planned)
	failed := false
	for _, tp := range planned {
		failed = failed || tp.o.writeErrors > 0 || tp.o.auditErr != nil
	}
	result := "ok"
	if failed {
		result = "error"
		p.r.index.needFull(p.key())
	}
	targetedPassesTotal.WithLabelValues(p.cm.Namespace, p.cm.Name, result).Inc()
	if failed {
		return reconcile.Result{}, fmt.Errorf("writing the changed resources of %s failed; a full pass follows", p.key())
	}
	if p.newFight {
		// Reported by a full pass, at once.
		p.carryFought()
		p.r.index.needFull(p.key())
		return reconcile.Result{RequeueAfter: fightReportDelay}, nil
	}
	return reconcile.Result{RequeueAfter: p.untilFullDue()}, nil
}

// fightReportDelay is how soon the full pass that reports a new fight
// follows the targeted pass that found it.
const fightReportDelay = 100 * time.Millisecond

// untilFullDue is how long until the next full pass is due (at least a
// second).
func (p *pass) untilFullDue() time.Duration {
	return max(p.st.full.at.Add(p.every).Sub(p.r.Now()), time.Second)
}

// specKeyOf identifies the generations of the object and its targets.
func specKeyOf(cm *v1alpha1.CloudMetadata, targets []*target) string {
	key := fmt.Sprintf("%d", cm.Generation)
	for _, t := range targets {
		key += fmt.Sprintf("/%s=%d", t.key(), t.obj.GetGeneration())
	}
	return key
}
