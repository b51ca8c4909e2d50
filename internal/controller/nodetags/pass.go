package nodetags

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/version"
)

// Reconciler syncs the nodes of each NodeTagSync with their cloud resources.
// Build it with NewReconciler.
type Reconciler struct {
	kit.Base
	providers cloud.Providers
	audit     *audit.Log
	// nodeWriteConcurrency bounds parallel Node patches.
	nodeWriteConcurrency int

	once  sync.Once
	nodes nodeSource
	mu    sync.Mutex
	syncs *kit.States[string, *syncState] // by NodeTagSync name
	// writes are the controller's Node writes: in flight until the cache
	// shows them, and their watch events, which need no pass (echo.go).
	writes kit.InFlight[string]

	// events turns cloud changes into targeted passes (read.go).
	changeEvents
}

// syncState is what the controller remembers about one NodeTagSync between
// passes. It is dropped when the NodeTagSync is deleted.
type syncState struct {
	notes *notify.Notifier
	// lastRead is when the cloud was last read fresh for it, and request
	// the sync request that read served.
	lastRead time.Time
	request  string
	// steady are the nodes the last pass found fully in sync, with the
	// state they were in (steadyMark).
	steady map[string]string
	// backoff spaces passes whose cloud read met errors a person must fix.
	backoff kit.Backoff
	// lastStatus is the status this controller last wrote (nil: unknown).
	lastStatus *v1alpha1.NodeTagSyncStatus
	// fullEpoch and fullGeneration are the change book's epoch and the
	// generation the last successful full pass served: a targeted pass
	// needs both current (read.go).
	fullEpoch      uint64
	fullGeneration int64
	// held is the mass deletion the last pass held (nil: none), so that the
	// same set keeps its approval token across passes.
	held *v1alpha1.HeldDeletions
	// caseWarnings are the includeTags patterns the last fresh pass found
	// to match only ignoring case (warnCaseOnlyPatterns), warned about in
	// every pass until a fresh pass finds otherwise.
	caseWarnings []string
	// notYetPasses counts the passes in a row that found a node's resource
	// the cloud does not show yet (notYetRequeue).
	notYetPasses int
	// recent is what the last hour's passes, full and targeted, wrote
	// that later passes judge by (kit.Recent): the mass-deletion guard
	// judges a tag's deletions across passes (tags.GuardDeletions), and a
	// tag put back too often on one resource is left alone (hold.go).
	// carriers is how many resources carried each synced tag at the last
	// full pass.
	recent   kit.Recent
	carriers map[string]int
	// writers are who last changed the resources, where the changes said
	// (a stopped fight names them).
	writers kit.Writers
}

// The controller reads through its cache and writes with patches only; events
// about cluster-scoped objects land in the default namespace. test/e2e proves
// every verb here is needed.
// +kubebuilder:rbac:groups=tagsync.io,resources=nodetagsyncs,verbs=list;watch
// +kubebuilder:rbac:groups=tagsync.io,resources=nodetagsyncs/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch,namespace=default

// Reconcile runs one sync pass for a NodeTagSync; when it ends, the cloud
// changes routed to the NodeTagSync before it started are done.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.init()
	return r.subscriber.Serve(ctx, req.Name, func(ctx context.Context) (reconcile.Result, error) { return r.reconcile(ctx, req) })
}

// reconcile is one pass: targeted when only cloud changes can have asked
// for it, else full.
func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var nts v1alpha1.NodeTagSync
	if err := r.Client.Get(ctx, req.NamespacedName, &nts); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	st := r.syncs.For(nts.Name, nts.UID)
	st.recent.Load(nts.Status.RecentWrites)
	cfg, err := configFor(&nts, r.providers)
	if err == nil {
		err = kit.RequiredVersion("NodeTagSync", &nts, version.Get())
	}
	if err != nil {
		st.notes.Once(&nts, "spec/"+err.Error(), ReasonInvalidSpec, err.Error())
		st.notes.EndPass(false)
		return reconcile.Result{}, r.writeStatus(ctx, &nts, invalidStatus(&nts, err), st)
	}
	p := r.newPass(&nts, cfg, st)
	p.cfg.resync, p.health = r.subscriber.Interval(cfg.resync)
	epoch := r.changes.currentEpoch()
	r.changes.expect(nts.Name)
	ids, carried, fresh := r.changes.take(nts.Name)
	st.writers.Note(carried)
	if len(ids) > 0 && !fresh && r.canTarget(&nts, st, p.cfg.resync, epoch) {
		return p.runTargeted(ctx, ids, carried)
	}
	p.changesPending = fresh || len(ids) > 0
	res, err := p.run(ctx)
	if err != nil || !p.complete || p.out.errors > 0 {
		r.changes.restore(nts.Name, ids, p.changesPending)
		kit.KeepForRetry(ctx, p.unfinished())
		return res, err
	}
	r.mu.Lock()
	st.fullEpoch, st.fullGeneration = epoch, nts.Generation
	r.mu.Unlock()
	return res, err
}

// unfinished says why a full pass that returned no error left the
// changes it took for its retry.
func (p *pass) unfinished() string {
	if !p.complete {
		return "the pass did not see every node"
	}
	return fmt.Sprintf("%d nodes not synced", p.out.errors)
}

// NewReconciler builds a Reconciler. c reads Nodes and NodeTagSyncs (from
// the manager's cache) and writes them; providers are the configured clouds,
// chosen per NodeTagSync by spec.provider; recorder emits events (nil: the
// controller's own notify.Recorder, made at SetupWithManager; a recorder that
// reports refused events makes refused problem events be told again); log
// receives an audit record per cloud write (nil: none); clk is the clock
// (nil: the real one). A nil c means the manager's client.
func NewReconciler(c ctrl.Client, providers cloud.Providers, recorder events.EventRecorder, log *audit.Log, clk clock.PassiveClock) *Reconciler {
	if log == nil {
		log = audit.Discard()
	}
	return &Reconciler{Base: kit.NewBase(c, recorder, clk), providers: providers, audit: log, nodeWriteConcurrency: 16}
}

// SetupWithManager registers the controller: NodeTagSyncs (spec changes and
// sync requests) and Nodes (created, deleted, labels, taints or providerID
// changed) trigger a pass.
func (r *Reconciler) SetupWithManager(mgr ctrlManager) error {
	return setup(mgr, r)
}

func (r *Reconciler) init() {
	r.once.Do(func() {
		r.syncs = kit.NewStates[string](r.Events(), "Sync", func(n *notify.Notifier) *syncState { return &syncState{notes: n} })
		r.changes = newChangeBook()
		if r.nodes.client == nil {
			r.nodes.client = r.Client
		}
	})
}

// freshRead reports whether this pass must bypass the provider's read cache:
// the resync interval has passed since the last fresh read, or a new sync
// request was made.
func (r *Reconciler) freshRead(nts *v1alpha1.NodeTagSync, st *syncState, resync time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return st.lastRead.IsZero() || r.Now().Sub(st.lastRead) >= resync || st.request != nts.Annotations[v1alpha1.SyncRequestAnnotation]
}

func (r *Reconciler) markRead(nts *v1alpha1.NodeTagSync, st *syncState, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st.lastRead, st.request = at, nts.Annotations[v1alpha1.SyncRequestAnnotation]
}

// canTarget reports whether the NodeTagSync's pass may be targeted: its
// last full pass succeeded for the current spec, no Node changed and the
// hub did not overflow since (epoch), and no fresh full read is due.
func (r *Reconciler) canTarget(nts *v1alpha1.NodeTagSync, st *syncState, resync time.Duration, epoch uint64) bool {
	if r.freshRead(nts, st, resync) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return st.fullEpoch == epoch && st.fullGeneration == nts.Generation && st.lastStatus != nil
}

// nextPass is when the next fresh read is due.
func (r *Reconciler) nextPass(st *syncState, resync time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(st.lastRead.Add(resync).Sub(r.Now()), time.Second)
}

// forget drops a deleted NodeTagSync's state, metrics and index entries.
func (r *Reconciler) forget(name string) {
	r.syncs.Forget(name)
	r.changes.forget(name)
	for _, state := range nodeStates {
		nodesGauge.DeleteLabelValues(name, state)
	}
	conflictsGauge.DeleteLabelValues(name)
	deletionsHeldGauge.DeleteLabelValues(name)
	retainedGauge.DeleteLabelValues(name)
	unrepresentableGauge.DeleteLabelValues(name)
	lastSuccessGauge.DeleteLabelValues(name)
	failingGauge.DeleteLabelValues(name)
}

// pass is one sync pass over a NodeTagSync's nodes. Everything that belongs
// to one pass (its notifier, counters, outcome) lives here, never on the
// Reconciler, so passes of different NodeTagSyncs cannot mix.
type pass struct {
	r     *Reconciler
	nts   *v1alpha1.NodeTagSync
	cfg   syncConfig
	st    *syncState
	notes *notify.Notifier
	out   *outcome
	start time.Time
	// nextSteady are the steady marks this pass found (see steadyMark).
	nextSteady map[string]string
	// placed are the managed nodes this pass found, by canonical resource
	// ID, for the change index (read.go).
	placed map[string][]string
	// placeNotes are the placement notes of the managed nodes that have one.
	placeNotes map[string]string
	// health is the event sources' health (nil: events off), reported in
	// the status; changesPending makes a full pass read fresh because
	// cloud changes are waiting for it.
	health         *cloudchange.Health
	changesPending bool
	// complete is set when the pass read the cloud and synced every node
	// it could.
	complete bool
	// targeted is set for a pass over the nodes of changed resources only
	// (targeted.go); people are the changed resources (canonical IDs)
	// whose latest change the cloud attributes to a person, with who.
	targeted bool
	people   map[string]string
}

func (r *Reconciler) newPass(nts *v1alpha1.NodeTagSync, cfg syncConfig, st *syncState) *pass {
	return &pass{r: r, nts: nts, cfg: cfg, st: st, notes: st.notes, out: &outcome{}, start: r.Now(),
		nextSteady: map[string]string{}, placed: map[string][]string{}, placeNotes: map[string]string{}}
}

// run is one full pass, as its stages: read the nodes and the cloud
// (read.go), sync them (plan, hold, write, report: sync), keep what the
// next passes need, report the pass and write the status (report.go), and
// schedule the next pass.
func (p *pass) run(ctx context.Context) (reconcile.Result, error) {
	sel, err := p.selectNodes(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	p.warnAboutSpec()
	snap, fresh, err := p.readCloud(ctx, sel.items)
	if err != nil {
		return p.readFailed(ctx, fresh, err)
	}
	p.warnCaseOnlyPatterns(sel.items, snap, fresh)
	p.sync(ctx, sel.items, snap)
	p.complete = len(snap.Failed) == 0
	p.reportFull(ctx, sel, fresh, snap.Failed)
	if err := p.writePassStatus(ctx, fresh, snap.Failed); err != nil {
		return reconcile.Result{}, err
	}
	return p.next()
}

// sync is the work of a pass, full or targeted, on its nodes and their
// cloud read, in stages: the planner places the nodes on their resources
// and decides every resource's plan (planPass, pure); what the pass must
// not write is held back across all of them (holdWrites: suspend,
// deletionPolicy Retain, a mass deletion); the applier makes the cloud
// writes, then copies the shared resources' synced tags to their members
// where the cloud needs it (planMemberWrites, writeMembers: an Auto
// Scaling group's instances), then the Node writes (writeAll, writeNodes);
// and the reporter,
// once every write is made, turns the settled plans into counts, events
// and metrics (report).
func (p *pass) sync(ctx context.Context, nodes []*cachedNode, snap cloud.Snapshot) {
	p.reportReadFailures(snap.Failed)
	pl := planPass(planInput{cfg: p.cfg, generation: p.nts.Generation, steady: p.st.steady, inFlight: p.r.writes.Replaced,
		people: p.people}, nodes, snap)
	h := holdWrites(p.cfg, pl.plans, p.guardInput(pl, snap), approval(p.nts, p.heldBefore(), p.r.Now()))
	for _, d := range h.allowed {
		p.st.recent.Deletions.Record(p.cfg.nameCase(), d.Resource, d.Names, p.r.Now())
	}
	h.fights = stopFights(p.st.recent.Restores, p.cfg.nameCase(), pl.plans, p.r.Now(), p.st.writers)
	results := p.writeAll(ctx, pl.plans)
	p.writeMembers(ctx, planMemberWrites(p.cfg, pl, results, snap))
	p.writeNodes(ctx, results)
	p.report(ctx, pl, results, h)
}

// guardInput is what the guard knows beyond this pass's plans: the
// resources carrying each tag (a full pass's count; a targeted pass reads
// only some resources, so it takes the larger of its own and the last full
// pass's) and the deletions of the window.
func (p *pass) guardInput(pl passPlan, snap cloud.Snapshot) guardInput {
	now := carriers(p.cfg, pl.placed, snap)
	if !p.targeted {
		p.st.carriers = now
	} else {
		for k, n := range p.st.carriers {
			now[k] = max(now[k], n)
		}
	}
	return guardInput{carriers: now, recent: p.st.recent.Deletions.Recent(p.r.Now())}
}

// heldBefore is the mass deletion the last pass held (nil: none): the
// same set keeps its approval token.
func (p *pass) heldBefore() *v1alpha1.HeldDeletions {
	if p.st.held != nil {
		return p.st.held
	}
	return p.nts.Status.DeletionsHeld
}

// next schedules the next pass: after the cloud's Retry-After when it
// throttled us, with the workqueue's backoff after other errors (what
// succeeded is not redone), soon while our own writes are in flight or a
// new node's resource is not shown by the cloud yet, else at the next
// resync.
func (p *pass) next() (reconcile.Result, error) {
	o := p.out
	if wait, ok := cloud.RetryAfter(o.err()); ok {
		return reconcile.Result{RequeueAfter: max(wait, time.Second)}, nil
	}
	p.st.backoff.Reset()
	if o.errors > 0 {
		return reconcile.Result{}, fmt.Errorf("%d nodes could not be synced; first error: %s", o.errors, o.firstError)
	}
	if o.memberErrors > 0 {
		return reconcile.Result{}, fmt.Errorf("%d instances could not be given their group's tags; first error: %s", o.memberErrors, o.firstError)
	}
	if o.inFlight > 0 {
		// Our own writes have not reached the cache yet; their watch events
		// normally trigger the next pass, this is the safety net.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	if o.notYet > 0 {
		// A new node's resource the cloud does not show yet: look again
		// soon, not at the next resync, and less often the longer it lasts.
		p.st.notYetPasses++
		return reconcile.Result{RequeueAfter: min(notYetRequeue(p.st.notYetPasses), p.r.nextPass(p.st, p.cfg.resync))}, nil
	}
	p.st.notYetPasses = 0
	return reconcile.Result{RequeueAfter: p.r.nextPass(p.st, p.cfg.resync)}, nil
}

// NotYetRequeue is how soon a pass is retried while a node's resource is
// not shown by the cloud yet (cloud.Placement.NotYet); the wait doubles
// with each further pass that still finds one, up to MaxNotYetRequeue.
// Each such pass reads the missing resources again (on AWS one
// DescribeInstances for all of a region's), so over AWS's two-minute
// grace for a new instance that costs 5 reads, not 24.
const (
	NotYetRequeue    = 5 * time.Second
	MaxNotYetRequeue = 40 * time.Second
)

// notYetRequeue is the wait after the nth pass in a row that found a
// resource the cloud does not show yet (n >= 1): 5 s, 10 s, 20 s, then
// 40 s.
func notYetRequeue(n int) time.Duration {
	wait := NotYetRequeue
	for i := 1; i < n && wait < MaxNotYetRequeue; i++ {
		wait *= 2
	}
	return min(wait, MaxNotYetRequeue)
}

// readFailed ends a pass whose cloud read could not run at all: nothing was
// written, the status says why, and the pass is retried (after the cloud's
// Retry-After when it throttled us).
func (p *pass) readFailed(ctx context.Context, fresh bool, err error) (reconcile.Result, error) {
	passesTotal.WithLabelValues(p.nts.Name, fmt.Sprint(fresh), "error").Inc()
	failingGauge.WithLabelValues(p.nts.Name).Set(1)
	p.notes.Once(p.nts, "read", ReasonCloudReadFailed, "reading the cloud failed, nothing was written: "+err.Error())
	p.notes.EndPass(false)
	if serr := p.r.writeStatus(ctx, p.nts, readFailedStatus(p.nts, err), p.st); serr != nil {
		log.FromContext(ctx).Error(serr, "writing status")
	}
	if wait, ok := cloud.RetryAfter(err); ok {
		return reconcile.Result{RequeueAfter: max(wait, time.Second)}, nil
	}
	if kit.NeedsPerson(err) {
		// Reported above; retried when the spec changes, or after the
		// resync interval doubling up to kit.MaxPersonBackoff.
		return reconcile.Result{RequeueAfter: p.st.backoff.Failed(fmt.Sprint(p.nts.Generation), p.cfg.resync)}, nil
	}
	return reconcile.Result{}, fmt.Errorf("reading the cloud: %w", err)
}
