// Package nodetags is the NodeTagSync controller: it keeps Azure VM and
// scale-set tags and node labels in agreement with a per-node three-way merge
// (DESIGN.md section 3). One reconcile is a pass over every node a
// NodeTagSync selects: one bulk cloud read, one write per resource that
// changed, one patch per Node that changed, nothing when nothing changed.
package nodetags

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
)

// SyncRequestAnnotation on a NodeTagSync asks for a pass with fresh cloud
// reads now: set it to any new value (for example a timestamp).
const SyncRequestAnnotation = "tagsync.io/sync-requested"

// Reconciler syncs the nodes of each NodeTagSync with their cloud resources.
type Reconciler struct {
	// Client reads Nodes and NodeTagSyncs (from the cache) and writes them.
	Client ctrl.Client
	// Provider is the cloud.
	Provider cloud.Provider
	// Recorder emits Kubernetes events; nil disables events.
	Recorder events.EventRecorder
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// NodeWriteConcurrency bounds parallel Node patches; 0 means 16.
	NodeWriteConcurrency int

	once sync.Once
	// notes is the notifier of the NodeTagSync being reconciled; passes run
	// one at a time (setup sets MaxConcurrentReconciles to 1).
	notes     *notifier
	notifiers map[types.UID]*notifier
	mu        sync.Mutex
	lastRead  map[types.UID]readMark
	pending   map[string]string // node name → version our last write replaced
}

// readMark remembers when a NodeTagSync last read the cloud fresh and which
// sync request it has served.
type readMark struct {
	at      time.Time
	request string
}

// The controller reads through its cache and writes with patches only; events
// about cluster-scoped objects land in the default namespace. test/e2e proves
// every verb here is needed.
// +kubebuilder:rbac:groups=tagsync.io,resources=nodetagsyncs,verbs=list;watch
// +kubebuilder:rbac:groups=tagsync.io,resources=nodetagsyncs/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch,namespace=default

// Reconcile runs one sync pass for a NodeTagSync.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.init()
	var nts v1alpha1.NodeTagSync
	if err := r.Client.Get(ctx, req.NamespacedName, &nts); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	r.notes = r.notifierFor(nts.UID)
	cfg, err := configFrom(nts.Spec)
	if err != nil {
		r.notes.once(&nts, "spec/"+err.Error(), ReasonInvalidSpec, err.Error())
		return reconcile.Result{}, r.writeStatus(ctx, &nts, invalidStatus(&nts, err))
	}
	return r.pass(ctx, &nts, cfg)
}

// pass reads the nodes and the cloud, syncs every resource, writes Nodes and
// the status, and schedules the next resync.
func (r *Reconciler) pass(ctx context.Context, nts *v1alpha1.NodeTagSync, cfg syncConfig) (reconcile.Result, error) {
	start := r.now()
	logger := log.FromContext(ctx)
	var nodes corev1.NodeList
	// The pass only reads the Nodes, so it reads the cache's own objects
	// rather than a deep copy of every Node.
	if err := r.Client.List(ctx, &nodes, ctrl.MatchingLabelsSelector{Selector: cfg.selector}, ctrl.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodes: %w", err)
	}
	claimants, err := r.olderClaimants(ctx, nts)
	if err != nil {
		return reconcile.Result{}, err
	}
	items, claimed := withoutClaimed(nodes.Items, claimants)
	fresh := r.freshRead(nts, cfg.resync)
	snap, err := r.Provider.Snapshot(ctx, cloudNodes(items), cloud.ReadOptions{
		Target: cfg.target, Fresh: fresh, ResourceGroups: cfg.resourceGroups,
	})
	if err != nil {
		passesTotal.WithLabelValues(nts.Name, fmt.Sprint(fresh), "error").Inc()
		r.notes.warn(nts, ReasonCloudReadFailed, err.Error())
		if serr := r.writeStatus(ctx, nts, readFailedStatus(nts, err)); serr != nil {
			logger.Error(serr, "writing status")
		}
		return reconcile.Result{}, fmt.Errorf("reading the cloud: %w", err)
	}
	if fresh {
		r.markRead(nts, start)
	}
	out := r.syncAll(ctx, nts, cfg, items, snap)
	out.claimed = claimed
	r.notes.endPass()
	out.record(nts.Name)
	passesTotal.WithLabelValues(nts.Name, fmt.Sprint(fresh), "ok").Inc()
	passDuration.WithLabelValues(nts.Name).Observe(r.now().Sub(start).Seconds())
	logger.V(1).Info("sync pass done", "fresh", fresh, "synced", out.synced, "unmanaged", out.unmanaged,
		"conflicts", len(out.conflicts), "errors", out.errors, "cloudWrites", out.cloudWrites, "nodeWrites", out.nodeWrites)
	status := out.status(nts, fresh, start)
	if err := r.writeStatus(ctx, nts, status); err != nil {
		return reconcile.Result{}, err
	}
	if out.errors > 0 {
		// Retry with the workqueue's backoff; what succeeded is not redone.
		return reconcile.Result{}, fmt.Errorf("%d nodes could not be synced; first error: %s", out.errors, out.firstError)
	}
	if out.inFlight > 0 {
		// Our own writes have not reached the cache yet; their watch events
		// normally trigger the next pass, this is the safety net.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	return reconcile.Result{RequeueAfter: r.nextPass(nts, cfg.resync)}, nil
}

// syncAll groups managed nodes by the resource carrying their tags and syncs
// each resource, in a stable order.
func (r *Reconciler) syncAll(ctx context.Context, nts *v1alpha1.NodeTagSync, cfg syncConfig, nodes []corev1.Node, snap cloud.Snapshot) *outcome {
	out := &outcome{}
	groups := map[string][]*member{}
	for i := range nodes {
		node := &nodes[i]
		p, ok := snap.Placements[node.Name]
		if !ok || !p.Managed {
			out.unmanaged++
			log.FromContext(ctx).V(2).Info("node not synced", "node", node.Name, "reason", p.Reason)
			continue
		}
		if r.stale(node) {
			out.synced++
			out.inFlight++
			continue
		}
		m, err := newMember(cfg, node, p.Note)
		if err != nil {
			r.notes.once(node, "base/"+node.Name, ReasonTagUnrepresentable, err.Error())
		}
		if p.Note != "" {
			r.notes.once(node, "note/"+node.Name+"/"+p.Note, ReasonFallback, p.Note)
		}
		id := cloud.CanonicalID(p.Resource)
		groups[id] = append(groups[id], m)
	}
	ids := make([]string, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		res, ok := snap.Resources[id]
		if !ok {
			out.errors += len(groups[id])
			continue
		}
		plan := r.syncResource(ctx, cfg, res, groups[id])
		r.report(nts, plan, out)
		r.applyNodes(ctx, nts, cfg, plan, out)
	}
	return out
}

// SetupWithManager registers the controller: NodeTagSyncs (spec changes and
// sync requests) and Nodes (created, deleted, labels, taints or providerID
// changed) trigger a pass.
func (r *Reconciler) SetupWithManager(mgr ctrlManager) error {
	return setup(mgr, r)
}

func (r *Reconciler) init() {
	r.once.Do(func() {
		r.notifiers = map[types.UID]*notifier{}
		r.lastRead = map[types.UID]readMark{}
		r.pending = map[string]string{}
	})
}

// notifierFor returns the NodeTagSync's notifier, so one NodeTagSync's pass
// never forgets the problems another reported.
func (r *Reconciler) notifierFor(uid types.UID) *notifier {
	n, ok := r.notifiers[uid]
	if !ok {
		n = newNotifier(r.Recorder)
		r.notifiers[uid] = n
	}
	return n
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// freshRead reports whether this pass must bypass the provider's read cache:
// the resync interval has passed since the last fresh read, or a new sync
// request was made.
func (r *Reconciler) freshRead(nts *v1alpha1.NodeTagSync, resync time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	mark, ok := r.lastRead[nts.UID]
	return !ok || r.now().Sub(mark.at) >= resync || mark.request != nts.Annotations[SyncRequestAnnotation]
}

func (r *Reconciler) markRead(nts *v1alpha1.NodeTagSync, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastRead[nts.UID] = readMark{at: at, request: nts.Annotations[SyncRequestAnnotation]}
}

// nextPass is when the next fresh read is due.
func (r *Reconciler) nextPass(nts *v1alpha1.NodeTagSync, resync time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	due := r.lastRead[nts.UID].at.Add(resync).Sub(r.now())
	if due < time.Second {
		due = time.Second
	}
	return due
}

func (r *Reconciler) forget(name string) {
	for _, state := range []string{"synced", "unmanaged", "error"} {
		nodesGauge.DeleteLabelValues(name, state)
	}
	conflictsGauge.DeleteLabelValues(name)
	unrepresentableGauge.DeleteLabelValues(name)
}

// cloudNodes converts Nodes to what the provider needs.
func cloudNodes(nodes []corev1.Node) []cloud.Node {
	out := make([]cloud.Node, len(nodes))
	for i, n := range nodes {
		out[i] = cloud.Node{Name: n.Name, ProviderID: n.Spec.ProviderID, Labels: n.Labels}
	}
	return out
}
