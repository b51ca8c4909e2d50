// Package labelsync is the label sync controller (seed 002,
// docs/labelsync.md): labels a Metal3 BareMetalHost carries under owned
// prefixes are kept, exactly, on the Node that runs on it, in whichever
// workload cluster that Node is. The host is the source of truth for
// in-scope labels: added, changed and removed with it; an edit made on the
// Node is reverted as soon as the Node's watch reports it. Labels outside
// the prefixes are never touched.
//
// A source says which hosts own which prefixes: a LabelSyncProfile (its
// host selector in its namespace), or, for CAPM3 users, a Metal3Cluster
// annotated with metal3.io/metal3-label-sync-prefixes (the hosts of its
// Clusters). One reconcile is a pass over one source: every host is
// followed, through the management cluster's cache, along BareMetalHost →
// spec.consumerRef (Metal3Machine) → owner Machine → status.nodeRef, and its
// Node is read from the workload cluster's cache; a Node whose in-scope
// labels differ gets one merge patch of the changed keys (and, once its
// labels are in place, loses the labelsync.tagsync.io/pending taint).
// Nothing is written when nothing changed. A chain is followed only within
// the host's namespace and to a Metal3Machine that names the host back
// (other links are refused and reported); two hosts that reach one Node and
// want other values for a key both own write neither (conflicts.go).
// Hosts of different clusters are
// synced concurrently, so an unreachable cluster holds up only its own hosts:
// they are reported (status, events) and retried with a per-cluster backoff.
//
// Workload clusters are reached with Cluster API's controllers/clustercache
// (it builds with tagsync's Kubernetes and controller-runtime versions): a
// cached client and a Node watch per Cluster from its <cluster>-kubeconfig
// Secret (key value), health probes, and connect/disconnect events that
// start passes. Passes re-read the Secrets of the clusters they use
// (kubeconfigs): a Secret deleted, unreadable or malformed closes the
// cluster's connection, a rotated one reconnects it with the new content,
// and an unreachable cluster is reported with its cause. The management cluster
// is a workload cluster like any other: a Cluster whose kubeconfig Secret
// reaches it (a self-hosted or pivoted cluster) is synced through that
// Secret; a Cluster without its Secret is unreachable, never silently taken
// to be the management cluster.
package labelsync

import (
	"context"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
)

// ControllerName names the controller in --controllers, logs, metrics and
// events.
const ControllerName = "labelsync"

// infraRequestPrefix marks the reconcile requests of Metal3Cluster sources:
// an object name cannot contain ":", so "Metal3Cluster:<name>" never names
// a LabelSyncProfile.
const infraRequestPrefix = "Metal3Cluster:"

// Reconciler syncs the hosts of each source to their Nodes. Build it with
// NewReconciler.
type Reconciler struct {
	kit.Base
	workloads Workloads

	once sync.Once
	mu   sync.Mutex
	// sources are the per-source states, by reconcile request; what a
	// state's last pass touched is guarded by mu.
	sources *kit.States[types.NamespacedName, *state]
	// clusters are the workload clusters' health, for backoff and reports.
	clusters map[types.NamespacedName]*clusterHealth
	// kubeconfigs checks the workload clusters' kubeconfig Secrets (nil
	// when workloads was given to NewReconciler).
	kubeconfigs *kubeconfigs
	// inFlight are Nodes written whose write the cache has not shown yet:
	// the resourceVersion the write replaced.
	inFlight kit.InFlight[nodeKey]
	// claims are what each host wants on its Node, for one writer per key.
	claims *claimRegistry
	// wakeups run the sources a contest's end concerns at once, without
	// blocking the pass that ends it (kit.Wake).
	wakeups kit.Wake
	// missing, when set, says which CRDs this cluster lacks (Metal3 or
	// Cluster API): profiles then report it and nothing is synced until
	// they appear (awaitCRDs). Read it with crdsMissing.
	missing atomic.Pointer[string]
}

// state is what the controller remembers about one source between passes;
// it is dropped when the source goes away.
type state struct {
	notes *notify.Notifier
	// clusters and nodes are what the last pass touched, to map Node and
	// Cluster events back to the sources that care.
	clusters map[types.NamespacedName]bool
	nodes    map[nodeKey]bool
	hosts    map[types.NamespacedName]bool
	// retained names the labels deletionPolicy Retain kept at the last
	// pass ("" when none), so the Retained event comes when they change.
	retained string
	// recent is what the last hour's passes wrote that later passes judge
	// by: the guard counts their label removals with a pass's own (a
	// profile's status keeps it for the next leader; a Metal3Cluster has
	// no status). held is the set the last pass held for approval (nil:
	// none), kept for a Metal3Cluster.
	recent kit.Recent
	held   *v1alpha1.HeldDeletions
}

// nodeKey is a Node in a workload cluster.
type nodeKey struct {
	cluster types.NamespacedName
	node    string
}

// NewReconciler builds a Reconciler. c reads the management cluster (nil:
// the manager's client); recorder emits events (nil: the controller's own,
// made at SetupWithManager); w reaches the workload clusters (nil: Cluster
// API's clustercache, set up at SetupWithManager); clk is the clock (nil:
// the real one).
func NewReconciler(c client.Client, recorder events.EventRecorder, w Workloads, clk clock.PassiveClock) *Reconciler {
	return &Reconciler{Base: kit.NewBase(c, recorder, clk), workloads: w}
}

// The controller reads the management cluster through its cache, writes
// profile status with patches, and reads kubeconfig Secrets (one GET per
// connection, never cached). Nodes are written with each workload cluster's
// own kubeconfig, not with these rules.
// +kubebuilder:rbac:groups=tagsync.io,resources=labelsyncprofiles,verbs=list;watch
// +kubebuilder:rbac:groups=tagsync.io,resources=labelsyncprofiles/status,verbs=patch
// +kubebuilder:rbac:groups=metal3.io,resources=baremetalhosts,verbs=list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3machines;metal3clusters,verbs=list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;machines,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs one pass over a source: a LabelSyncProfile, or a
// Metal3Cluster (requests named "Metal3Cluster:<name>").
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.init()
	src, err := r.sourceFor(ctx, req.NamespacedName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	st := r.sources.For(req.NamespacedName, src.obj.GetUID())
	if src.profile != nil {
		st.recent.Load(src.profile.Status.RecentWrites)
	}
	if src.invalid != nil {
		return r.invalidSource(ctx, src, st)
	}
	if missing := r.crdsMissing(); src.profile != nil && missing != "" {
		return reconcile.Result{}, r.reportMissing(ctx, src, st, missing)
	}
	if src.prefixes == nil {
		// A Metal3Cluster without the annotation: not a source.
		r.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	return r.newPass(src, st).run(ctx)
}

func (r *Reconciler) init() {
	r.once.Do(func() {
		r.sources = kit.NewStates[types.NamespacedName](r.Events(), "Sync", func(n *notify.Notifier) *state { return &state{notes: n} })
		r.clusters = map[types.NamespacedName]*clusterHealth{}
		r.claims = newClaimRegistry()
	})
}

// forget drops a source's state, claims and metrics.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.sources.Forget(key)
	r.mu.Lock()
	r.pruneHealthLocked()
	r.mu.Unlock()
	r.wake(r.claims.Release(func(c claimant, _ want) bool { return c.source == key }))
	forgetMetrics(key)
}

// wake queues passes over sources now; it never blocks.
func (r *Reconciler) wake(sources []types.NamespacedName) {
	for _, s := range sources {
		r.wakeups.Add(reconcile.Request{NamespacedName: s})
	}
}

// remember records what a pass touched, for mapping events to sources.
func (r *Reconciler) remember(st *state, clusters map[types.NamespacedName]bool, nodes map[nodeKey]bool, hosts map[types.NamespacedName]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st.clusters, st.nodes, st.hosts = clusters, nodes, hosts
	r.pruneHealthLocked()
}

// sourcesWhere returns the requests of the sources whose last pass matches.
func (r *Reconciler) sourcesWhere(match func(*state) bool) []reconcile.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []reconcile.Request
	r.sources.Each(func(key types.NamespacedName, st *state) {
		if match(st) {
			out = append(out, reconcile.Request{NamespacedName: key})
		}
	})
	return out
}

// known reports a source the controller holds state for.
func (r *Reconciler) known(key types.NamespacedName) bool {
	_, ok := r.sources.Get(key)
	return ok
}

// isProfileRequest reports a request for a LabelSyncProfile (not a
// Metal3Cluster).
func isProfileRequest(key types.NamespacedName) bool {
	return len(key.Name) < len(infraRequestPrefix) || key.Name[:len(infraRequestPrefix)] != infraRequestPrefix
}

// infraRequest is the request of a Metal3Cluster source.
func infraRequest(infra types.NamespacedName) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: infra.Namespace, Name: infraRequestPrefix + infra.Name}}
}

// reportMissing marks a profile not ready because Metal3 or Cluster API is
// not installed here.
func (r *Reconciler) reportMissing(ctx context.Context, src *source, st *state, missing string) error {
	msg := missing + "; label sync starts by itself once they are installed (it looks every 30s)"
	st.notes.Once(src.obj, "missing", ReasonCRDsMissing, msg)
	st.notes.EndPass(true)
	return r.writeProfileStatus(ctx, src, st, notReadyStatus(src.profile, ReasonCRDsMissing, msg, r.Now()))
}

// invalidSource reports a source that cannot be used (an invalid
// Metal3Cluster annotation): an event on it, and nothing synced.
func (r *Reconciler) invalidSource(_ context.Context, src *source, st *state) (reconcile.Result, error) {
	st.notes.Once(src.obj, "invalid/"+src.invalid.Error(), ReasonInvalidAnnotation,
		"label sync does nothing for this Metal3Cluster until its annotations are fixed: "+joinErrs(src.invalid))
	st.notes.EndPass(true)
	passesTotal.WithLabelValues(src.kind(), "invalid").Inc()
	return reconcile.Result{}, nil
}
