package metadata

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

// ControllerName names the controller in --controllers, logs, metrics and
// events.
const ControllerName = "metadata"

// Reconciler applies the requests of CloudMetadata objects. Build it with
// NewReconciler.
type Reconciler struct {
	kit.Base
	providers cloud.Providers
	audit     *audit.Log

	once sync.Once
	// expectOnce announces every object's claim at the first pass
	// (expectAll).
	expectOnce sync.Once
	states     *kit.States[types.NamespacedName, *state] // by CloudMetadata
	claims     *claimBook
	// wakeContests enqueues CloudMetadata objects whose contests changed,
	// without blocking the pass that changed them (kit.Wake).
	wakeContests kit.Wake
	// changeEvents turns cloud changes into passes (changes.go).
	changeEvents
	// searchLag is how long a pass serving a burst waits for the search
	// index (nil: DefaultSearchLag; fresh.go).
	searchLag *time.Duration
}

// state is what the controller remembers about one CloudMetadata between
// passes; it is dropped when the CloudMetadata is deleted.
type state struct {
	notes *notify.Notifier
	// held are, per target (kind/name), the tags each resource was seen
	// or made to carry with the requested value: under opcode add these are
	// the object's own there, so an outside edit of one is reverted.
	held map[string]*heldTags
	// backoff spaces passes that meet errors only a person can fix.
	backoff kit.Backoff
	// full is what the last full pass served (targeted.go); wrote is
	// when a pass last wrote tags.
	full  fullPass
	wrote time.Time
	// written are, per target and resource, the tags the object's recent
	// writes left (fresh.go).
	written map[string]map[string]written
	// recent is what the last hour's passes wrote that later passes judge
	// by: the mass-deletion guard counts their deletions with a pass's own
	// (safety.go), the put-backs are counted for fights (fights.go). The
	// status keeps it for the next leader.
	recent kit.Recent
	// fights are the put-backs stopped (fights.go), with the writer last
	// named for each, so that a new one makes the next pass full and
	// the writer is reported by it.
	fights map[kit.RecentTag]string
	// overridden are the tags whose write came back with another value
	// (fights.go): something on the write path changes them, so they are
	// not written there again within kit.RecentWindow.
	overridden kit.Overridden
}

// NewReconciler builds a Reconciler. c reads and writes the metadata objects
// (nil: the manager's client); providers are the configured clouds; recorder
// emits events (nil: the controller's own, made at SetupWithManager); log
// receives an audit record per cloud mutation (nil: none); clk is the clock
// (nil: the real one).
func NewReconciler(c client.Client, providers cloud.Providers, recorder events.EventRecorder, log *audit.Log, clk clock.PassiveClock) *Reconciler {
	if log == nil {
		log = audit.Discard()
	}
	return &Reconciler{Base: kit.NewBase(c, recorder, clk), providers: providers, audit: log}
}

// The controller reads through its cache and writes status with patches;
// events go to the namespace of the object concerned.
// +kubebuilder:rbac:groups=tagsync.io,resources=cloudmetadata;azuremetadata;awsmetadata,verbs=list;watch
// +kubebuilder:rbac:groups=tagsync.io,resources=cloudmetadata/status;azuremetadata/status;awsmetadata/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs one pass for a CloudMetadata; when it ends, the cloud
// changes routed to the object before it started are done.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.init()
	return r.subscriber.Serve(ctx, req.String(), func(ctx context.Context) (reconcile.Result, error) { return r.reconcile(ctx, req) })
}

// reconcile is one pass.
func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cm v1alpha1.CloudMetadata
	if err := r.Client.Get(ctx, req.NamespacedName, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx, req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	st := r.states.For(req.NamespacedName, cm.UID)
	st.recent.Load(cm.Status.RecentWrites)
	p := r.newPass(&cm, st)
	p.changed, p.carried, p.fullNeeded = r.index.take(req.NamespacedName)
	return p.run(ctx)
}

func (r *Reconciler) init() {
	r.once.Do(func() {
		r.states = kit.NewStates[types.NamespacedName](r.Events(), "Sync", func(n *notify.Notifier) *state {
			return &state{notes: n, held: map[string]*heldTags{}}
		})
		r.claims = newClaimBook()
		r.index = newResourceIndex()
	})
}

// forget drops a deleted CloudMetadata's state, metrics and claims, and
// passes its rivals again at once.
func (r *Reconciler) forget(ctx context.Context, key types.NamespacedName) {
	r.states.Forget(key)
	r.index.forget(key)
	forgetMetrics(key)
	r.wakeUp(ctx, r.claims.Release(func(c claimant, _ want) bool { return c.cm == key }))
}

// pass is one reconcile of a CloudMetadata: every target it drives, synced
// once.
type pass struct {
	r       *Reconciler
	cm      *v1alpha1.CloudMetadata
	st      *state
	started time.Time
	log     logr.Logger
	// newFight is set when the pass stopped a put-back for the first
	// time (fights.go).
	newFight bool
	// fought are the resources of the new fights, as the pass read them.
	fought []cloud.Classified
	// answered are, per resource written, the tags whose write the cloud
	// answered with another value, with that value (remember keeps it).
	answered map[string]tags.Set
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
// can (targeted.go); else read every target (read), plan them (plan), apply the
// safety controls to the whole pass (safeguard), write (write), and report
// the pass in metrics, events and statuses, saying when to run again
// (report).
func (p *pass) run(ctx context.Context) (reconcile.Result, error) {
	p.log = ctrllog.FromContext(ctx)
	p.r.index.changes.Warm.Begin(p.key())
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
	if !p.awaitSearch(ctx, res.targets) {
		p.r.index.restore(p.key(), p.changed, p.fullNeeded)
		return reconcile.Result{}, ctx.Err()
	}
	outcomes, work := p.read(ctx, res)
	planned := p.plan(ctx, work)
	if len(res.problems) == 0 {
		p.safeguard(planned)
	}
	p.write(ctx, planned)
	p.settleHold(planned)
	p.st.keepHeld(res.targets)
	p.keepIndexed(res.targets)
	if len(res.problems) == 0 {
		// The index now knows this object's resources.
		p.r.index.changes.Replay(p.key(), func(c cloudchange.Change) { p.r.Route(c) })
	}
	p.releaseClaims(ctx)
	return p.report(ctx, res.problems, outcomes)
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
