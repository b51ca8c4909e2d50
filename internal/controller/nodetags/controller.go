// Package nodetags is the NodeTagSync controller: it keeps the tags of the
// nodes' cloud resources (Azure VMs and scale sets, AWS EC2 instances and
// Auto Scaling groups) and node labels in agreement with a per-node
// three-way merge (docs/architecture.md). One reconcile is a pass over every node a
// NodeTagSync selects: one bulk cloud read, one write per resource that
// changed, one patch per Node that changed, nothing when nothing changed.
package nodetags

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
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

	// events turns cloud changes into targeted passes (changes.go).
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
	// needs both current (changes.go).
	fullEpoch      uint64
	fullGeneration int64
	// held is the mass deletion the last pass held (nil: none), so that the
	// same set keeps its approval token across passes.
	held *v1alpha1.HeldDeletions
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
	cfg, err := configFor(&nts, r.providers)
	if err != nil {
		st.notes.Once(&nts, "spec/"+err.Error(), ReasonInvalidSpec, err.Error())
		st.notes.EndPass(false)
		return reconcile.Result{}, r.writeStatus(ctx, &nts, invalidStatus(&nts, err), st)
	}
	p := r.newPass(&nts, cfg, st)
	p.cfg.resync, p.health = r.subscriber.Interval(cfg.resync)
	epoch := r.changes.currentEpoch()
	ids, carried, fresh := r.changes.take(nts.Name)
	if len(ids) > 0 && !fresh && r.canTarget(&nts, st, p.cfg.resync, epoch) {
		return p.runTargeted(ctx, ids, carried)
	}
	p.changesPending = fresh || len(ids) > 0
	res, err := p.run(ctx)
	if err != nil || !p.complete || p.out.errors > 0 {
		r.changes.restore(nts.Name, ids, p.changesPending)
		return res, err
	}
	r.mu.Lock()
	st.fullEpoch, st.fullGeneration = epoch, nts.Generation
	r.mu.Unlock()
	return res, err
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
		r.syncs = kit.NewStates[string](r.Recorder, "Sync", func(n *notify.Notifier) *syncState { return &syncState{notes: n} })
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
}
