package metadata

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

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

// targetPlan is one target's pass between the plan and the write stage,
// in a full pass and a targeted one alike: o is its outcome, which the
// write's tally completes.
type targetPlan struct {
	o        *outcome
	provider cloud.ClassifiedProvider
	plans    []Planned
	held     *heldTags
	// resources are the resources discovered; complete says the
	// discovery searched every scope (never in a targeted pass): then the
	// held-tags record forgets the resources not found.
	resources []cloud.Classified
	complete  bool
}

func (r *Reconciler) newPass(cm *v1alpha1.CloudMetadata, st *state) *pass {
	p := &pass{r: r, cm: cm, st: st, started: r.Now(), claimed: map[claimant]bool{}}
	p.every, p.health = r.subscriber.Interval(cm.Spec.ControllerConfig.SyncInterval())
	return p
}

// run is one pass, in stages: read the references (one broken: nothing
// is written at all); serve the cloud changes with a targeted pass when one
// can (targeted.go); else read and plan every target (plan), apply the
// safety controls to the whole pass (safeguard), write (write), and report
// the pass in metrics, events and statuses, saying when to run again
// (report).
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
	outcomes, planned := p.plan(ctx, res)
	if len(res.problems) == 0 {
		p.safeguard(planned)
	}
	p.write(ctx, planned)
	p.settleHold(planned)
	p.st.keepHeld(res.targets)
	p.keepIndexed(res.targets)
	p.releaseClaims(ctx)
	return p.report(ctx, res.problems, outcomes)
}

// plan is the read and plan stages of a full pass: each target read and
// planned (planTarget), unless a reference is broken. It returns every
// target's outcome, and the plans of those that got as far.
func (p *pass) plan(ctx context.Context, res resolved) ([]*outcome, []*targetPlan) {
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
	return outcomes, planned
}

// planTarget reads and plans one target: check, discover, stake its
// claims and plan (planOf). It returns the target's outcome, and its
// plans unless it stopped before planning (then the outcome says why).
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
	contested := p.stake(ctx, t, req, provider.Rules().NameCase(), disc.Resources, o)
	tp := p.planOf(o, provider, req, disc.Resources, contested)
	o.held = tp.held
	tp.complete = len(disc.Failed) == 0
	return o, tp
}

// planOf plans a target's resources with the pure planner, as its
// held-tags record says it holds them and leaving alone the names
// contested there: the plan step of a full and a targeted pass.
func (p *pass) planOf(o *outcome, provider cloud.ClassifiedProvider, req Request, resources []cloud.Classified, contested map[string][]string) *targetPlan {
	held := p.st.heldFor(o.t)
	return &targetPlan{o: o, provider: provider, plans: req.planYielding(resources, held.lookup, contested), held: held, resources: resources}
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
