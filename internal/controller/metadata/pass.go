package metadata

import (
	"context"
	"errors"
	"fmt"
	"time"

	"slices"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// transientRetry is how soon a pass that hit transient write errors runs
// again (never later than syncEvery).
const transientRetry = 30 * time.Second

// pass is one reconcile of a CloudMetadata: every target it drives, synced
// once.
type pass struct {
	r       *Reconciler
	cm      *v1alpha1.CloudMetadata
	st      *state
	started time.Time
	log     logr.Logger
	// claimed are the objects whose claims this pass staked or kept.
	claimed map[claimant]bool
	// every is the polling interval (the events resync interval while the
	// event sources are up), health their health (nil: events off).
	every  time.Duration
	health *cloudchange.Health
	// changed are the resources cloud changes named since the last pass;
	// fullNeeded says the pass must be full whatever they are.
	changed    []string
	fullNeeded bool
	// carried is what the latest changes of the changed resources carried.
	carried map[string]kit.Carried
	// hold is the mass deletion the pass held (nil: none); kept describes
	// the deletions deletionPolicy Retain kept, per resource.
	hold *hold
	kept []string
	// planned are the targets the pass planned (safeguard).
	planned []*targetPlan
}

func (r *Reconciler) newPass(cm *v1alpha1.CloudMetadata, st *state) *pass {
	p := &pass{r: r, cm: cm, st: st, started: r.Now(), claimed: map[claimant]bool{}}
	p.every, p.health = r.subscriber.Interval(cm.Spec.ControllerConfig.SyncInterval())
	return p
}

// run resolves the references, syncs each target (unless a reference is
// broken: then nothing is written at all), writes the statuses and says
// when to run again.
func (p *pass) run(ctx context.Context) (reconcile.Result, error) {
	p.log = ctrllog.FromContext(ctx)
	res, err := p.r.resolve(ctx, p.cm)
	if err != nil {
		p.r.index.restore(p.key(), p.changed, p.fullNeeded)
		return reconcile.Result{}, err
	}
	if len(p.changed) > 0 && !p.fullNeeded && p.canTarget(res) {
		result, err := p.runTargeted(ctx, res, p.changed)
		if !errors.Is(err, errFullPass) {
			return result, err
		}
	}
	if p.servedAlready(res) {
		return reconcile.Result{RequeueAfter: p.untilFullDue()}, nil
	}
	outcomes := make([]*outcome, 0, len(res.targets))
	var planned []*targetPlan
	for _, t := range res.targets {
		if len(res.problems) > 0 {
			o := notReady(t, p.cm, res.problems)
			o.suspended = p.suspendedBy(t)
			outcomes = append(outcomes, o)
			continue
		}
		o, tp := p.planTarget(ctx, t)
		outcomes = append(outcomes, o)
		if tp != nil {
			planned = append(planned, tp)
		}
	}
	if len(res.problems) == 0 {
		p.safeguard(planned)
	}
	for _, tp := range planned {
		p.writeTarget(ctx, tp)
	}
	p.settleHold(planned)
	for _, o := range outcomes {
		o.observe(p)
	}
	p.st.keepHeld(res.targets)
	p.keepIndexed(res.targets)
	p.releaseClaims(ctx)
	p.report(res.problems, outcomes)
	if err := p.writeStatuses(ctx, res.problems, outcomes); err != nil {
		// Not done: the retry must be a full pass that writes the
		// statuses, not one served by the last full pass that succeeded.
		p.r.index.needFull(p.key())
		return reconcile.Result{}, err
	}
	p.doneFull(res.problems, outcomes)
	return reconcile.Result{RequeueAfter: p.next(outcomes)}, nil
}

// planTarget is the first half of the pass over one target: check,
// discover, stake its claims and plan. It returns the target's outcome,
// and its plans unless it stopped before planning (then the outcome says
// why).
func (p *pass) planTarget(ctx context.Context, t *target) (*outcome, *targetPlan) {
	o := &outcome{t: t, started: p.r.Now(), suspended: p.suspendedBy(t)}
	provider, err := p.r.providers.ClassifiedProvider(t.cloud)
	if err != nil {
		o.request = &condition{ReasonProviderNotConfigured,
			fmt.Sprintf("%v: start tagsync with the %s flags (docs/metadata.md) to apply %s objects", err, t.cloud, t.kind)}
		return o, nil
	}
	req := t.request(p.cm)
	if err := req.Validate(provider.Rules()); err != nil {
		o.invalid = err
		return o, nil
	}
	o.approved = true
	disc, err := provider.Discover(ctx, req.Classifiers, req.Discover)
	o.discoveryCalls = disc.Calls
	if err != nil {
		p.claimed[p.claimantOf(t)] = true // its last claim stands
		o.readFailed(err)
		return o, nil
	}
	o.scopesFailed(disc.Failed)
	p.r.index.saw(p.key(), t.key(), disc.Resources, len(disc.Failed) == 0)
	held := p.st.heldFor(t)
	contested := p.stake(ctx, t, req, provider.Rules().NameCase(), disc.Resources, o)
	o.held = held
	return o, &targetPlan{o: o, provider: provider, plans: req.planYielding(disc.Resources, held.lookup, contested),
		held: held, resources: disc.Resources, complete: len(disc.Failed) == 0}
}

// writeTarget is the second half: write what the safeguards left of the
// plans (nothing while the target is suspended), then tally.
func (p *pass) writeTarget(ctx context.Context, tp *targetPlan) {
	o := tp.o
	var results map[string]error
	if o.suspended == "" {
		results = p.recordAndWrite(ctx, tp.provider, o.t, tp.plans, tp.held, o)
	} else {
		o.auditErr = p.r.audit.Probe()
	}
	o.tally(tp.plans, results, tp.held)
	if tp.complete {
		tp.held.keepOnly(seenIDs(tp.resources))
	}
}

// heldFor returns the held-tags record of a target.
func (st *state) heldFor(t *target) *heldTags {
	h, ok := st.held[t.key()]
	if !ok {
		h = heldFromStatus(*t.status)
		st.held[t.key()] = h
	}
	return h
}

// keepHeld forgets the held-tags records of objects the CloudMetadata no
// longer references.
func (st *state) keepHeld(targets []*target) {
	keep := map[string]bool{}
	for _, t := range targets {
		keep[t.key()] = true
	}
	for k := range st.held {
		if !keep[k] {
			delete(st.held, k)
		}
	}
}

// seenIDs indexes resources by canonical ID.
func seenIDs(resources []cloud.Classified) map[string]bool {
	out := make(map[string]bool, len(resources))
	for _, r := range resources {
		out[cloud.CanonicalID(r.ID)] = true
	}
	return out
}

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

// key names the pass's CloudMetadata.
func (p *pass) key() types.NamespacedName {
	return types.NamespacedName{Namespace: p.cm.Namespace, Name: p.cm.Name}
}

// keepIndexed records the CloudMetadata's classifiers and clouds for the
// change routing, and forgets the resources of targets it dropped.
func (p *pass) keepIndexed(targets []*target) {
	want := interest{classifiers: classifiers(p.cm)}
	keys := make([]string, len(targets))
	for i, t := range targets {
		keys[i] = t.key()
		want.searches = append(want.searches, search{cloud: t.cloud, scopes: t.scopes})
		if !slices.Contains(want.clouds, t.cloud) {
			want.clouds = append(want.clouds, t.cloud)
		}
	}
	p.r.index.keep(p.key(), keys, want)
}

// isPermanent reports write errors that a retry does not cure.
func isPermanent(err error) bool {
	return errors.Is(err, cloud.ErrTooManyTags) || errors.Is(err, cloud.ErrForbidden) || errors.Is(err, cloud.ErrNotFound)
}
