package metadata

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
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

// targetWork is one target's part of a targeted pass.
type targetWork struct {
	t         *target
	provider  cloud.ClassifiedProvider
	req       Request
	resources []cloud.Classified
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
	return reconcile.Result{RequeueAfter: p.untilFullDue()}, nil
}

// untilFullDue is how long until the next full pass is due (at least a
// second).
func (p *pass) untilFullDue() time.Duration {
	return max(p.st.full.at.Add(p.every).Sub(p.r.Now()), time.Second)
}

// readChanged reads each changed resource once, unless its latest change
// carried its tags (see usableCarried), and returns, per target, the ones its
// last discovery matched; errFullPass when a full pass costs fewer
// requests.
func (p *pass) readChanged(ctx context.Context, targets []*target, ids []string) ([]targetWork, error) {
	if n := p.readsNeeded(targets, ids); n > max(p.st.full.calls, alwaysTargetedReads) {
		targetedFallbacksTotal.WithLabelValues(p.cm.Namespace, p.cm.Name).Inc()
		p.log.V(1).Info("many changed resources: a full pass reads them for less", "reads", n, "fullPassCalls", p.st.full.calls)
		return nil, errFullPass
	}
	read := map[string]cloud.Classified{}
	var work []targetWork
	for _, t := range targets {
		mine := p.r.index.matchedBy(p.key(), t.key(), ids)
		if len(mine) == 0 {
			continue
		}
		provider, err := p.r.providers.ClassifiedProvider(t.cloud)
		if err != nil {
			return nil, errFullPass
		}
		w := targetWork{t: t, provider: provider, req: t.request(p.cm)}
		for _, found := range mine {
			c, done := read[cloud.CanonicalID(found.ID)]
			if !done {
				if c, err = p.readOne(ctx, provider, found); err != nil {
					return nil, err
				}
				read[cloud.CanonicalID(found.ID)] = c
			}
			if !cloud.Classifies(provider.Rules().NameCase(), c.Tags, w.req.Classifiers) {
				return nil, errFullPass // it left the object's scope
			}
			w.resources = append(w.resources, c)
		}
		work = append(work, w)
	}
	return work, nil
}

// readsNeeded is how many of the changed resources ids the targets' last
// discoveries matched and a targeted pass would read: those whose latest
// change carried no tags it may use.
func (p *pass) readsNeeded(targets []*target, ids []string) int {
	toRead := map[string]bool{}
	for _, t := range targets {
		for _, found := range p.r.index.matchedBy(p.key(), t.key(), ids) {
			if _, ok := p.usableCarried(found.ID); !ok {
				toRead[cloud.CanonicalID(found.ID)] = true
			}
		}
	}
	return len(toRead)
}

// readOne is a changed resource as its latest change carried it
// (usableCarried), or else as the cloud reads it now (or as another
// reader read it since the change was received: cloud.WithReadAfter);
// errFullPass when it cannot be read by ID (AWS).
func (p *pass) readOne(ctx context.Context, provider cloud.ClassifiedProvider, found cloud.Classified) (cloud.Classified, error) {
	if c, ok := p.usableCarried(found.ID); ok {
		found.Tags = c.Tags
		return found, nil
	}
	reader, ok := provider.(cloud.ClassifiedReader)
	if !ok {
		return cloud.Classified{}, errFullPass
	}
	if c, ok := p.carried[cloud.CanonicalID(found.ID)]; ok && !c.Received.IsZero() {
		// Another controller's read of the resource for the same change
		// (the node sync's, of a VM or scale set) serves this pass too.
		ctx = cloud.WithReadAfter(ctx, c.Received)
	}
	c, err := reader.ReadClassified(ctx, found.ID)
	if err != nil {
		return cloud.Classified{}, readErr(err)
	}
	return c, nil
}

// usableCarried is what the latest change of the resource id carried,
// when it is its whole tag set from a change made after the object's last
// full pass and last write (an older one may predate them).
func (p *pass) usableCarried(id string) (kit.Carried, bool) {
	c, ok := p.carried[cloud.CanonicalID(id)]
	return c, ok && (c.Usable(p.st.full.at) && c.Usable(p.st.wrote) || p.echoOfWrite(cloud.CanonicalID(id), c))
}

// readErr is a failed read's error: a resource that is gone needs a full
// pass (its held tags are forgotten there).
func readErr(err error) error {
	if errors.Is(err, cloud.ErrNotFound) {
		return errFullPass
	}
	return fmt.Errorf("reading a changed resource: %w", err)
}

// planChanged plans one target's changed resources as a full pass does
// (planOf), for the write stage both share.
// It returns nil when nothing may be written for the target (it is
// suspended), and errFullPass when the plans delete tags the
// deletionPolicy allows to delete: the mass-deletion guard looks at a whole
// pass, so deletions are left to a full pass. Under Retain the deletions
// are dropped (the full passes count and report them).
func (p *pass) planChanged(w targetWork) (*targetPlan, error) {
	if p.suspendedBy(w.t) != "" {
		return nil, nil
	}
	ids := make([]string, len(w.resources))
	for i, r := range w.resources {
		ids[i] = cloud.CanonicalID(r.ID)
	}
	contested, _ := contestedOn(p.r.claims, p.claimantOf(w.t), ids)
	tp := p.planOf(&outcome{t: w.t}, w.provider, w.req, w.resources, contested)
	for i := range tp.plans {
		pl := &tp.plans[i]
		if len(pl.Plan.Patch.Delete) == 0 {
			continue
		}
		if p.cm.Spec.Deletes() {
			return nil, errFullPass
		}
		pl.Plan.Patch.Delete, pl.Plan.Expect = nil, nil
	}
	return tp, nil
}

// specKeyOf identifies the generations of the object and its targets.
func specKeyOf(cm *v1alpha1.CloudMetadata, targets []*target) string {
	key := fmt.Sprintf("%d", cm.Generation)
	for _, t := range targets {
		key += fmt.Sprintf("/%s=%d", t.key(), t.obj.GetGeneration())
	}
	return key
}
