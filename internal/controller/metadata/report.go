package metadata

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
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
	return reconcile.Result{RequeueAfter: p.next(outcomes)}, nil
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
