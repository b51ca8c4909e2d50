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
	tagevents "github.com/tagsync/tagsync/internal/events"
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
	health *tagevents.Health
	// changed are the resources cloud changes named since the last pass;
	// fullNeeded says the pass must be full whatever they are.
	changed    []string
	fullNeeded bool
	// carried is what the latest changes of the changed resources carried.
	carried map[string]tagevents.Carried
}

func (r *Reconciler) newPass(cm *v1alpha1.CloudMetadata, st *state) *pass {
	p := &pass{r: r, cm: cm, st: st, started: r.Now(), claimed: map[claimant]bool{}}
	p.every, p.health = r.Interval(cm.Spec.ControllerConfig.SyncInterval())
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
	for _, t := range res.targets {
		if len(res.problems) > 0 {
			outcomes = append(outcomes, notReady(t, p.cm, res.problems))
			continue
		}
		outcomes = append(outcomes, p.syncTarget(ctx, t))
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

// syncTarget is the pass over one target: check, discover, plan, write,
// tally.
func (p *pass) syncTarget(ctx context.Context, t *target) *outcome {
	o := &outcome{t: t, started: p.r.Now()}
	defer o.observe(p)
	provider, err := p.r.providers.ClassifiedProvider(t.cloud)
	if err != nil {
		o.request = &condition{ReasonProviderNotConfigured,
			fmt.Sprintf("%v: start tagsync with the %s flags (docs/metadata.md) to apply %s objects", err, t.cloud, t.kind)}
		return o
	}
	req := t.request(p.cm)
	if err := req.Validate(provider.Rules()); err != nil {
		o.invalid = err
		return o
	}
	o.approved = true
	disc, err := provider.Discover(ctx, req.Classifiers, req.Discover)
	o.discoveryCalls = disc.Calls
	if err != nil {
		p.claimed[p.claimantOf(t)] = true // its last claim stands
		o.readFailed(err)
		return o
	}
	o.scopesFailed(disc.Failed)
	p.r.index.saw(p.key(), t.key(), disc.Resources, len(disc.Failed) == 0)
	held := p.st.heldFor(t)
	contested := p.stake(ctx, t, req, provider.Rules().NameCase(), disc.Resources, o)
	plans := req.planYielding(disc.Resources, held.lookup, contested)
	o.held = held
	results := p.recordAndWrite(ctx, provider, t, plans, held, o)
	o.tally(plans, results, held)
	if len(disc.Failed) == 0 {
		held.keepOnly(seenIDs(disc.Resources))
	}
	return o
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
