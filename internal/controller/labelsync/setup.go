package labelsync

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// maxConcurrentPasses bounds how many sources sync at once.
const maxConcurrentPasses = 4

// nodeWatchName names the Node watch in each workload cluster's cache.
const nodeWatchName = "labelsync-nodes"

// SetupWithManager registers the controller. It watches LabelSyncProfiles
// (spec changes, sync requests) and, once the Metal3 and Cluster API CRDs
// are served, BareMetalHosts, Metal3Machines, Machines, Clusters and
// Metal3Clusters in the management cluster, sets up clustercache for the
// workload clusters (their connects and disconnects start passes) and, per
// workload cluster a pass uses, its Nodes. While those CRDs are missing it
// reports, on each LabelSyncProfile, what is missing, and looks for them
// (awaitCRDs): label sync starts when they appear, without a restart.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if err := r.prepare(mgr); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	missing := missingKinds(dc)
	r.setMissing(missing)
	ctl, err := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(kit.Options(maxConcurrentPasses)).
		For(&v1alpha1.LabelSyncProfile{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Build(r)
	if err != nil {
		return err
	}
	if missing == "" {
		return r.watchAll(mgr, ctl)
	}
	mgr.GetLogger().WithName(ControllerName).Info("label sync is idle until the CRDs it needs are installed: "+missing, "pollingEvery", maxCRDPoll)
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return r.awaitCRDs(ctx, mgr, ctl, dc) }))
}

// prepare gives the reconciler its client and recorder and the manager's
// scheme the Cluster API and BareMetalHost types.
func (r *Reconciler) prepare(mgr manager.Manager) error {
	if err := r.UseManager(mgr, ControllerName); err != nil {
		return err
	}
	if err := clusterv1.AddToScheme(mgr.GetScheme()); err != nil {
		return err
	}
	if err := metal3.AddToScheme(mgr.GetScheme()); err != nil {
		return err
	}
	r.init()
	return nil
}

// watchAll adds the watches of the management objects, clustercache and
// its cluster events, and the per-cluster Node watch, to the controller.
func (r *Reconciler) watchAll(mgr manager.Manager, ctl controller.Controller) error {
	if r.workloads == nil {
		if err := r.connectWorkloads(mgr, ctl); err != nil {
			return err
		}
	}
	c := mgr.GetCache()
	for _, src := range []crsource.Source{
		r.wakeups.Source(),
		crsource.Kind(c, client.Object(&metal3.BareMetalHost{}), handler.EnqueueRequestsFromMapFunc(r.hostSources), hostChanged()),
		crsource.Kind(c, client.Object(metadataOf(metal3.Metal3MachineGVK)), handler.EnqueueRequestsFromMapFunc(r.metal3MachineSources), metal3MachineChanged()),
		crsource.Kind(c, client.Object(&clusterv1.Machine{}), handler.EnqueueRequestsFromMapFunc(r.machineSources), machineChanged()),
		crsource.Kind(c, client.Object(&clusterv1.Cluster{}), r.clusterEvents(), clusterChanged()),
		crsource.Kind(c, client.Object(metadataOf(metal3.Metal3ClusterGVK)), handler.EnqueueRequestsFromMapFunc(r.infraSources),
			predicate.AnnotationChangedPredicate{}),
	} {
		if err := ctl.Watch(src); err != nil {
			return err
		}
	}
	return nil
}

// connectWorkloads sets up clustercache, its connect and disconnect events
// (which start passes), the kubeconfig Secret checks and the per-cluster
// Node watch.
func (r *Reconciler) connectWorkloads(mgr manager.Manager, ctl controller.Controller) error {
	var cc clustercache.ClusterCache
	kc := newKubeconfigs(mgr.GetAPIReader(), mgr.GetClient(), func(ctx context.Context, cluster types.NamespacedName) {
		reconcileCluster(ctx, cc, cluster)
	}, r.Clock)
	cc, err := r.setupClusterCache(mgr, kc.usable)
	if err != nil {
		return err
	}
	if err := ctl.Watch(drainingSource{cc.GetClusterSource(ControllerName, r.clusterSources)}); err != nil {
		return err
	}
	r.kubeconfigs = kc
	r.workloads = &clusterCacheWorkloads{cc: cc, kubeconfigs: kc, watch: func(ctx context.Context, cluster types.NamespacedName) error {
		return cc.Watch(ctx, cluster, clustercache.NewWatcher(clustercache.WatcherOptions{
			Name: nodeWatchName, Watcher: ctl, Kind: &corev1.Node{},
			EventHandler: r.nodeEvents(cluster), Predicates: []predicate.Predicate{nodeChanged()},
		}))
	}}
	return nil
}

// reconcileCluster runs clustercache's reconcile of one Cluster now: it
// disconnects a Cluster its filter excludes and connects one it admits.
func reconcileCluster(ctx context.Context, cc clustercache.ClusterCache, cluster types.NamespacedName) {
	if rec, ok := cc.(reconcile.Reconciler); ok {
		_, _ = rec.Reconcile(ctx, reconcile.Request{NamespacedName: cluster})
	}
}

// drainingSource is clustercache's source of connect and disconnect events,
// kept reading after the controller stops: clustercache sends them on an
// unbuffered channel while it holds a lock, so a send nobody reads would
// hold its reconcile, and with it the manager's shutdown, forever. Events
// read after the stop reach a queue that is shut down and are dropped.
type drainingSource struct{ crsource.Source }

// Start starts the source with a context the controller's stop does not
// cancel.
func (s drainingSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	return s.Source.Start(context.WithoutCancel(ctx), q)
}

// setupClusterCache sets up Cluster API's clustercache for the clusters
// whose infrastructure is a Metal3Cluster and whose kubeconfig Secret is
// usable, stopped with the manager.
func (r *Reconciler) setupClusterCache(mgr manager.Manager, usable func(types.NamespacedName) bool) (clustercache.ClusterCache, error) {
	cc, err := clustercache.SetupWithManager(context.Background(), mgr, clustercache.Options{
		// One live GET per connection: Secrets are never cached.
		SecretClient: mgr.GetAPIReader(),
		Client:       clustercache.ClientOptions{UserAgent: "tagsync-" + ControllerName},
		Cache:        clustercache.CacheOptions{DefaultTransform: ctrlcache.TransformStripManagedFields(), ByObject: nodeCache()},
		ClusterFilter: func(c *clusterv1.Cluster) bool {
			ref := c.Spec.InfrastructureRef
			return ref.Kind == metal3.Metal3ClusterGVK.Kind && ref.APIGroup == metal3.Metal3ClusterGVK.Group &&
				usable(types.NamespacedName{Namespace: c.Namespace, Name: c.Name})
		},
	}, controller.Options{MaxConcurrentReconciles: 4})
	if err != nil {
		return nil, fmt.Errorf("clustercache: %w", err)
	}
	// The workload clusters' caches run outside the manager: stop them
	// with it, so a stopped manager leaves no watch open.
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		if s, ok := cc.(interface{ Shutdown() }); ok {
			s.Shutdown()
		}
		return nil
	}))
	return cc, err
}

// nodeCache keeps, of each workload cluster's Nodes, what label sync
// reads: metadata and taints.
func nodeCache() map[client.Object]ctrlcache.ByObject {
	return map[client.Object]ctrlcache.ByObject{&corev1.Node{}: {Transform: func(obj any) (any, error) {
		if n, ok := obj.(*corev1.Node); ok {
			n.ManagedFields = nil
			n.Status = corev1.NodeStatus{}
			n.Spec = corev1.NodeSpec{Taints: n.Spec.Taints}
		}
		return obj, nil
	}}}
}

// hostSources maps a BareMetalHost to the profiles of its namespace whose
// selector matches it, and to the sources whose last pass covered it or
// whose Metal3Cluster its chain leads to.
func (r *Reconciler) hostSources(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	var list v1alpha1.LabelSyncProfileList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err == nil {
		for _, p := range list.Items {
			if sel, err := metav1.LabelSelectorAsSelector(&p.Spec.HostSelector); err == nil && sel.Matches(labels.Set(o.GetLabels())) {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
			}
		}
	}
	key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	out = append(out, r.sourcesWhere(func(st *state) bool { return st.hosts[key] })...)
	if h, ok := o.(*metal3.BareMetalHost); ok {
		if l, err := resolve(ctx, getReader{r.Client}, h); err == nil && l.infra.Name != "" {
			out = append(out, infraRequest(l.infra))
		}
	}
	return out
}

// metal3MachineSources maps a Metal3Machine to its host's sources.
func (r *Reconciler) metal3MachineSources(ctx context.Context, o client.Object) []reconcile.Request {
	key, ok := hostOfMachine(o.GetAnnotations())
	if !ok {
		return nil
	}
	var h metal3.BareMetalHost
	if err := r.Client.Get(ctx, key, &h); err != nil {
		return nil
	}
	return r.hostSources(ctx, &h)
}

// machineSources maps a Machine to its host's sources, through its
// Metal3Machine.
func (r *Reconciler) machineSources(ctx context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*clusterv1.Machine)
	if !ok {
		return nil
	}
	h, err := r.hostOfMachineObject(ctx, m)
	if err != nil || h == nil {
		return nil
	}
	return r.hostSources(ctx, h)
}

// clusterSources maps a Cluster (a change, or clustercache's connect and
// disconnect) to the sources whose last pass used it, and to its
// Metal3Cluster's source.
func (r *Reconciler) clusterSources(_ context.Context, o client.Object) []reconcile.Request {
	key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	out := r.sourcesWhere(func(st *state) bool { return st.clusters[key] })
	if c, ok := o.(*clusterv1.Cluster); ok {
		if ref := c.Spec.InfrastructureRef; ref.Kind == metal3.Metal3ClusterGVK.Kind && ref.APIGroup == metal3.Metal3ClusterGVK.Group {
			out = append(out, infraRequest(types.NamespacedName{Namespace: c.Namespace, Name: ref.Name}))
		}
	}
	return out
}

// clusterEvents maps Cluster events to sources (clusterSources); a deleted
// Cluster is forgotten first: its health, its share of the
// unreachable_clusters gauge and its kubeconfig state.
func (r *Reconciler) clusterEvents() handler.EventHandler {
	toSources := handler.EnqueueRequestsFromMapFunc(r.clusterSources)
	return handler.Funcs{
		CreateFunc:  toSources.Create,
		UpdateFunc:  toSources.Update,
		GenericFunc: toSources.Generic,
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.forgetCluster(types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()})
			toSources.Delete(ctx, e, q)
		},
	}
}

// infraSources maps a Metal3Cluster to its own source (when it asks for
// label sync, or did: dropping the annotation ends the source), and to the
// sources whose last pass used one of its Clusters (its pause annotation
// pauses their hosts).
func (r *Reconciler) infraSources(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	var clusters clusterv1.ClusterList
	if err := r.Client.List(ctx, &clusters, client.InNamespace(o.GetNamespace())); err == nil {
		for _, c := range clusters.Items {
			if ref := c.Spec.InfrastructureRef; ref.Kind == metal3.Metal3ClusterGVK.Kind && ref.APIGroup == metal3.Metal3ClusterGVK.Group && ref.Name == o.GetName() {
				key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
				out = append(out, r.sourcesWhere(func(st *state) bool { return st.clusters[key] })...)
			}
		}
	}
	req := infraRequest(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
	if hasSyncAnnotation(o) || r.known(req.NamespacedName) {
		out = append(out, req)
	}
	return out
}

// nodeEvents maps a workload cluster's Node events to the sources whose
// last pass looked at that Node, or, for a Node no source knows yet (new or
// replaced), to the sources using the cluster.
func (r *Reconciler) nodeEvents(cluster types.NamespacedName) handler.EventHandler {
	toSources := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		k := nodeKey{cluster: cluster, node: o.GetName()}
		if reqs := r.sourcesWhere(func(st *state) bool { return st.nodes[k] }); len(reqs) > 0 {
			return reqs
		}
		return r.sourcesWhere(func(st *state) bool { return st.clusters[cluster] })
	})
	return handler.Funcs{
		CreateFunc: toSources.Create,
		UpdateFunc: toSources.Update,
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.inFlight.Forget(nodeKey{cluster: cluster, node: e.Object.GetName()})
			toSources.Delete(ctx, e, q)
		},
	}
}

// nodeChanged lets through Node creations, deletions and changes of labels
// or taints; status heartbeats are ignored.
func nodeChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, ok1 := e.ObjectOld.(*corev1.Node)
			b, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 {
				return true
			}
			return !maps.Equal(a.Labels, b.Labels) ||
				!slices.EqualFunc(a.Spec.Taints, b.Spec.Taints, func(x, y corev1.Taint) bool { return x.MatchTaint(&y) && x.Value == y.Value })
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// hostChanged lets through host creations, deletions and changes of
// labels, annotations (pause) or consumer.
func hostChanged() predicate.Predicate {
	return kit.UpdateChanged(func(a, b *metal3.BareMetalHost) bool {
		return !maps.Equal(a.Labels, b.Labels) || !maps.Equal(a.Annotations, b.Annotations) ||
			!equalRef(a.Spec.ConsumerRef, b.Spec.ConsumerRef)
	})
}

// equalRef compares two optional object references.
func equalRef(a, b *corev1.ObjectReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// metal3MachineChanged lets through Metal3Machine changes label sync
// reads: its annotations (the host it names, pause) and owner (the Machine).
func metal3MachineChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !maps.Equal(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()) ||
			ownerMachine(e.ObjectOld.GetOwnerReferences()) != ownerMachine(e.ObjectNew.GetOwnerReferences())
	}}
}

// machineChanged lets through Machine changes label sync reads: its node,
// cluster, infrastructure reference and pause annotation.
func machineChanged() predicate.Predicate {
	return kit.UpdateChanged(func(a, b *clusterv1.Machine) bool {
		return a.Status.NodeRef != b.Status.NodeRef || a.Spec.ClusterName != b.Spec.ClusterName ||
			a.Spec.InfrastructureRef != b.Spec.InfrastructureRef || !maps.Equal(a.Annotations, b.Annotations)
	})
}

// clusterChanged lets through Cluster changes label sync reads: pause and
// infrastructure reference.
func clusterChanged() predicate.Predicate {
	return kit.UpdateChanged(func(a, b *clusterv1.Cluster) bool {
		return clusterPaused(a) != clusterPaused(b) || a.Spec.InfrastructureRef != b.Spec.InfrastructureRef
	})
}

// The CRDs label sync needs, and waiting for them.

const (
	// firstCRDPoll and maxCRDPoll space the looks for missing CRDs: 1s,
	// 2s, 4s, ... after the start (CRDs installed together with tagsync
	// are found at once), then every 30s.
	firstCRDPoll = time.Second
	maxCRDPoll   = 30 * time.Second
)

// neededResource is a kind label sync reads and its resource name.
type neededResource struct {
	gvk      schema.GroupVersionKind
	resource string
}

// neededResources are the Metal3 and Cluster API kinds label sync needs.
var neededResources = []neededResource{
	{metal3.HostGVK, "baremetalhosts"},
	{metal3.Metal3MachineGVK, "metal3machines"},
	{metal3.Metal3ClusterGVK, "metal3clusters"},
	{clusterv1.GroupVersion.WithKind("Machine"), "machines"},
	{clusterv1.GroupVersion.WithKind("Cluster"), "clusters"},
}

// missingKinds asks the API server's discovery (never a cache) which of
// the Metal3 and Cluster API kinds it does not serve, and names them; ""
// when all are there.
func missingKinds(dc discovery.DiscoveryInterface) string {
	served := map[string]map[string]bool{}
	var missing []string
	for _, n := range neededResources {
		gv := n.gvk.GroupVersion().String()
		if _, ok := served[gv]; !ok {
			served[gv] = map[string]bool{}
			if list, err := dc.ServerResourcesForGroupVersion(gv); err == nil {
				for _, res := range list.APIResources {
					served[gv][res.Name] = true
				}
			}
		}
		if !served[gv][n.resource] {
			missing = append(missing, n.gvk.Kind+" ("+gv+")")
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "this cluster does not serve " + strings.Join(missing, ", ") + ": label sync needs Metal3 (baremetal-operator, CAPM3) and Cluster API"
}

// awaitCRDs looks for the missing CRDs (firstCRDPoll, doubling up to
// maxCRDPoll) until they are served, then starts label sync: the watches,
// clustercache, and a pass for every profile (they said CRDsMissing).
func (r *Reconciler) awaitCRDs(ctx context.Context, mgr manager.Manager, ctl controller.Controller, dc discovery.DiscoveryInterface) error {
	t := time.NewTimer(firstCRDPoll)
	defer t.Stop()
	for wait := firstCRDPoll; ; wait = min(2*wait, maxCRDPoll) {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		missing := missingKinds(dc)
		if missing == "" {
			break
		}
		r.setMissing(missing)
		t.Reset(wait)
	}
	mgr.GetLogger().WithName(ControllerName).Info("the Metal3 and Cluster API CRDs are served now: label sync starts")
	if err := r.watchAll(mgr, ctl); err != nil {
		return err
	}
	r.setMissing("")
	return ctl.Watch(crsource.Kind(mgr.GetCache(), client.Object(&v1alpha1.LabelSyncProfile{}), &handler.EnqueueRequestForObject{}, onlyExisting()))
}

// onlyExisting lets through creation events only: a new watch delivers one
// for every object that exists, so each profile gets a pass.
func onlyExisting() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// setMissing records which CRDs are missing ("" once all are served).
func (r *Reconciler) setMissing(missing string) { r.missing.Store(&missing) }

// crdsMissing says which CRDs are missing, "" when none.
func (r *Reconciler) crdsMissing() string {
	if m := r.missing.Load(); m != nil {
		return *m
	}
	return ""
}
