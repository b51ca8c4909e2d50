package labelsync

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

// maxClustersAtOnce bounds how many workload clusters one pass syncs
// concurrently.
const maxClustersAtOnce = 8

// pass is one reconcile of a source: every host it covers, compared with
// its Node once.
type pass struct {
	r       *Reconciler
	src     *source
	st      *state
	started time.Time

	mu  sync.Mutex
	out outcome
	// stamp is the profile's lastSyncTime after the pass (zero for a
	// Metal3Cluster).
	stamp time.Time
}

// outcome is what a pass found and did.
type outcome struct {
	matched, inSync, paused int
	waiting                 map[v1alpha1.WaitReason][]string
	problems                []v1alpha1.HostProblem
	// written are the Nodes patched, described for the event.
	written []string
	sets    int
	deletes int
	// taintsReleased counts Nodes that lost the pending taint; stillTainted
	// the Nodes that keep it after the pass though their host matched
	// (contested keys, a failed write, a suspended source).
	taintsReleased, stillTainted int
	writeErrors                  int
	inFlight                     int
	// unreachable are the clusters that could not be reached, with the
	// wait before retrying them.
	unreachable map[types.NamespacedName]time.Duration
	// touched are the clusters, Nodes and hosts the pass looked at.
	clusters map[types.NamespacedName]bool
	nodes    map[nodeKey]bool
	hosts    map[types.NamespacedName]bool
	// staked are the claims the pass made, by Node UID.
	staked map[types.UID]map[claimant]bool
	// conflicts describe the hosts holding back contested keys.
	conflicts []string
	// contestNotes are the Warnings of contests, one per host and other
	// host.
	contestNotes []contestNote
	// retained are the labels an upsert-only source kept, as "node N of
	// C: key".
	retained []string
	// pending is what a suspended source would have written.
	pending v1alpha1.PendingLabelWrites
	// held is the set of label removals held for approval (nil: none);
	// approved is set when the approval annotation named it.
	held     *v1alpha1.HeldDeletions
	approved bool
}

// contestNote is the Warning of one host's contest with another host.
type contestNote struct {
	host, other types.NamespacedName
	note        string
}

func (r *Reconciler) newPass(src *source, st *state) *pass {
	return &pass{r: r, src: src, st: st, started: r.Now(), out: outcome{
		waiting: map[v1alpha1.WaitReason][]string{}, unreachable: map[types.NamespacedName]time.Duration{},
		clusters: map[types.NamespacedName]bool{}, nodes: map[nodeKey]bool{}, hosts: map[types.NamespacedName]bool{},
		staked: map[types.UID]map[claimant]bool{},
	}}
}

// run follows every host to its Node, syncs the clusters concurrently,
// reports, writes the status and says when to run again.
func (p *pass) run(ctx context.Context) (reconcile.Result, error) {
	hosts, err := p.r.hostsOf(ctx, p.src)
	if err != nil {
		passesTotal.WithLabelValues(p.src.kind(), "error").Inc()
		return reconcile.Result{}, err
	}
	byCluster := map[types.NamespacedName][]*link{}
	rd := newBulkReader(p.r.Client)
	for _, h := range hosts {
		l, err := resolve(ctx, rd, h)
		if err != nil {
			passesTotal.WithLabelValues(p.src.kind(), "error").Inc()
			return reconcile.Result{}, err
		}
		if p.src.infra != nil && l.infra != *p.src.infra {
			continue // the host's chain leads to another Metal3Cluster
		}
		p.out.matched++
		p.out.hosts[l.hostKey()] = true
		switch {
		case l.refused != "":
			p.problem(l, ReasonLinkRefused, "nothing is written for this host: "+l.refused)
		case l.paused:
			p.out.paused++
			if l.cluster.Name != "" {
				// Remembered so that unpausing the Cluster starts a pass
				// (clusterSources maps a Cluster to the sources that used it).
				p.out.clusters[l.cluster] = true
			}
		case l.cluster.Name != "":
			p.out.clusters[l.cluster] = true
			if l.wait != "" {
				p.wait(l, l.wait)
				continue
			}
			byCluster[l.cluster] = append(byCluster[l.cluster], l)
		case l.wait != "":
			p.wait(l, l.wait)
		}
	}
	p.syncClusters(ctx, byCluster)
	p.r.wake(p.r.claims.release(p.src.key, p.out.staked, func(c claim) bool {
		_, down := p.out.unreachable[c.cluster]
		return down // its host still wants the Node: hold on to the claim
	}))
	p.r.remember(p.st, p.out.clusters, p.out.nodes, p.out.hosts)
	p.report()
	p.observe()
	if p.src.profile != nil {
		if err := p.r.writeProfileStatus(ctx, p.src, p.st, p.profileStatus()); err != nil {
			return reconcile.Result{}, err
		}
	}
	ctrllog.FromContext(ctx).V(1).Info("label sync pass done", "source", p.src.kind()+" "+p.src.name(),
		"matched", p.out.matched, "inSync", p.out.inSync, "waiting", p.waitingCount(), "written", len(p.out.written))
	return reconcile.Result{RequeueAfter: p.next()}, nil
}

// syncClusters syncs the hosts of every workload cluster, in stages: each
// cluster's Nodes are read and its hosts planned (readCluster), the
// removals of the whole pass are judged at once (guard: a prefix new to
// the sync, one label removed from many Nodes), then each cluster's Nodes
// are written (writeCluster). Up to maxClustersAtOnce clusters are read
// or written at a time, so a slow or unreachable cluster delays only its
// own.
func (p *pass) syncClusters(ctx context.Context, byCluster map[types.NamespacedName][]*link) {
	keys := make([]types.NamespacedName, 0, len(byCluster))
	for k := range byCluster {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	works := make([]*clusterWork, len(keys))
	eachCluster(keys, func(i int, k types.NamespacedName) { works[i] = p.readCluster(ctx, k, byCluster[k]) })
	held := p.guard(works)
	eachCluster(keys, func(i int, _ types.NamespacedName) {
		if works[i] != nil {
			p.writeCluster(ctx, works[i], held)
		}
	})
}

// eachCluster runs do for each cluster, up to maxClustersAtOnce at a time.
func eachCluster(keys []types.NamespacedName, do func(int, types.NamespacedName)) {
	sem := make(chan struct{}, maxClustersAtOnce)
	var wg sync.WaitGroup
	for i, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			do(i, k)
		})
	}
	wg.Wait()
}

// clusterWork is one reachable workload cluster of a pass: its client and
// its hosts, read and planned.
type clusterWork struct {
	cluster types.NamespacedName
	c       client.Client
	hosts   []hostWork
}

// hostWork is one host of a pass with its Node (nil: not registered yet),
// the other hosts contesting keys of it, and its sync plan.
type hostWork struct {
	l        *link
	node     *corev1.Node
	contests []contest
	plan     tags.LabelSyncPlan
}

// readCluster reads the Nodes of one workload cluster with one List of its
// cache and plans its hosts. The first sign that the cluster cannot be
// reached makes every host of it wait, unsynced (nil).
func (p *pass) readCluster(ctx context.Context, cluster types.NamespacedName, links []*link) *clusterWork {
	w := p.r.workloads
	c, err := w.Client(ctx, cluster)
	if err == nil {
		err = w.WatchNodes(ctx, cluster)
	}
	var nodes map[string]*corev1.Node
	if err == nil {
		nodes, err = listNodes(ctx, c)
	}
	switch {
	case isUnreachable(err):
		p.unreachable(cluster, links, err)
		return nil
	case err != nil:
		for _, l := range links {
			p.problem(l, ReasonNodeReadFailed, fmt.Sprintf("listing the nodes of cluster %s: %v", cluster, err))
		}
		return nil
	}
	contests := p.stakeAll(links, nodes)
	out := &clusterWork{cluster: cluster, c: c, hosts: make([]hostWork, len(links))}
	for i, l := range links {
		hw := hostWork{l: l, node: nodes[l.node], contests: contests[i]}
		if hw.node != nil {
			rec, _ := tags.ParseLabelRecord(hw.node.Annotations[v1alpha1.LabelSyncRecordAnnotation]) // malformed: no memory, removals wait
			hw.plan = tags.PlanLabelSync(l.host.Labels, hw.node.Labels, p.src.prefixes, p.src.recordName(), rec)
		}
		out.hosts[i] = hw
	}
	return out
}

// writeCluster writes the Nodes of one cluster's hosts, except the
// removals held.
func (p *pass) writeCluster(ctx context.Context, cw *clusterWork, held map[nodeKey][]string) {
	for i, hw := range cw.hosts {
		if err := p.syncHost(ctx, cw.c, hw, held[nodeKey{cluster: cw.cluster, node: hw.l.node}]); err != nil {
			links := make([]*link, 0, len(cw.hosts)-i)
			for _, rest := range cw.hosts[i:] {
				links = append(links, rest.l)
			}
			p.unreachable(cw.cluster, links, err)
			return
		}
	}
	p.r.clusterReached(cw.cluster)
}

// listNodes reads a workload cluster's Nodes from its cache, by name,
// without copies (UnsafeDisableDeepCopy): they are read, never modified.
func listNodes(ctx context.Context, c client.Client) (map[string]*corev1.Node, error) {
	var list corev1.NodeList
	if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return byName(list.Items), nil
}

// stakeAll records what each host wants on its Node, then returns each
// host's contests with other hosts of the same Node (of this source or
// another), so two hosts of one pass see each other.
func (p *pass) stakeAll(links []*link, nodes map[string]*corev1.Node) [][]contest {
	out := make([][]contest, len(links))
	for _, l := range links {
		if node := nodes[l.node]; node != nil {
			p.r.wake(p.r.claims.stake(node.UID, newClaim(p.src, l)))
			p.mu.Lock()
			if p.out.staked[node.UID] == nil {
				p.out.staked[node.UID] = map[claimant]bool{}
			}
			p.out.staked[node.UID][claimant{source: p.src.key, host: l.hostKey()}] = true
			p.mu.Unlock()
		}
	}
	for i, l := range links {
		if node := nodes[l.node]; node != nil {
			out[i] = p.r.claims.contestsOf(node.UID, claimant{source: p.src.key, host: l.hostKey()})
		}
	}
	return out
}

// syncHost compares one host with its Node (nil: not registered yet) and
// writes the Node when they differ, except the keys other hosts of the
// Node contest (and then the pending taint stays) and the removals held.
// It returns an error only when the cluster could not be reached; other
// failures are recorded as the host's problem.
func (p *pass) syncHost(ctx context.Context, c client.Client, hw hostWork, held []string) error {
	l, node, contests := hw.l, hw.node, hw.contests
	k := nodeKey{cluster: l.cluster, node: l.node}
	if node == nil {
		p.wait(l, v1alpha1.WaitNoNodeRef)
		return nil
	}
	p.touch(k)
	u := updateFor(l.host.Labels, node.Labels, p.src.prefixes, node.Spec.Taints, p.src.retain)
	tainted := u.taints != nil
	inSync := len(contests) == 0
	var contested []string
	if !inSync {
		contested = contestedKeys(contests)
		u.labels, u.taints = u.labels.Without(contested), nil
		u.retained = slices.DeleteFunc(u.retained, func(k string) bool { return slices.Contains(contested, k) })
		p.contested(l, contests)
		p.keepsTaint(tainted)
	}
	u.remember(hw.plan, held, contested, node.Annotations[v1alpha1.LabelSyncRecordAnnotation])
	p.kept(l, u.retained)
	if u.isEmpty() {
		p.synced(inSync && len(held) == 0, false)
		return nil
	}
	if p.src.suspended {
		// Read and reported, never written: the Node is in sync only if
		// its labels already are.
		u.record = ""
		p.wouldWrite(u)
		p.keepsTaint(inSync && tainted)
		p.synced(inSync && u.labels.IsEmpty(), false)
		return nil
	}
	if p.r.inFlight.Stale(k, node.ResourceVersion) {
		p.synced(inSync, true)
		return nil
	}
	err := p.r.inFlight.Patch(ctx, c, k, node.Name, node.ResourceVersion, u.patch())
	switch {
	case err == nil:
		p.wrote(l, u)
		p.synced(inSync && len(held) == 0, true)
	case apierrors.IsConflict(err):
		// The Node changed since the cache read it; its watch event
		// brings a pass that sees the change.
		nodeWritesTotal.WithLabelValues("conflict").Inc()
		p.synced(inSync, true)
	case isUnreachable(err):
		nodeWritesTotal.WithLabelValues("error").Inc()
		return err
	default:
		nodeWritesTotal.WithLabelValues("error").Inc()
		p.problem(l, ReasonNodeWriteFailed, err.Error()+": check that the kubeconfig of cluster "+l.cluster.String()+" may patch nodes")
		p.mu.Lock()
		p.out.writeErrors++
		p.mu.Unlock()
		p.keepsTaint(inSync && tainted)
	}
	return nil
}

// keepsTaint counts a Node that keeps the pending taint after the pass
// (when tainted).
func (p *pass) keepsTaint(tainted bool) {
	if !tainted {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.stillTainted++
}

// unreachable makes the hosts wait for their cluster and records the
// failure for the backoff.
func (p *pass) unreachable(cluster types.NamespacedName, links []*link, err error) {
	retry := p.r.clusterFailed(cluster, err)
	msg := describeUnreachable(cluster, err)
	p.mu.Lock()
	p.out.unreachable[cluster] = retry
	p.mu.Unlock()
	for _, l := range links {
		p.wait(l, v1alpha1.WaitClusterUnreachable)
		p.problem(l, ReasonClusterUnreachable, msg)
	}
}

// wait counts a host waiting for a reason.
func (p *pass) wait(l *link, why v1alpha1.WaitReason) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.waiting[why] = append(p.out.waiting[why], l.host.Name)
}

// problem records a host's problem.
func (p *pass) problem(l *link, reason, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.problems = append(p.out.problems, v1alpha1.HostProblem{Host: l.host.Name, Cluster: l.cluster.String(), Node: l.node,
		Reason: reason, Message: notify.Fit(msg)})
}

// synced counts a host whose Node is in sync (or whose write is in
// flight), unless keys of it are contested, and a write in flight.
func (p *pass) synced(inSync, inFlight bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if inSync {
		p.out.inSync++
	}
	if inFlight {
		p.out.inFlight++
	}
}

// contested records a host whose Node's keys other hosts contest.
func (p *pass) contested(l *link, contests []contest) {
	msg := describeContests(contests)
	p.problem(l, v1alpha1.ReasonContestedKeys, fmt.Sprintf("node %s of cluster %s: %s; neither writes these keys until one of the hosts changes or no longer reaches the node",
		l.node, l.cluster, msg))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.conflicts = append(p.out.conflicts, fmt.Sprintf("host %s on node %s: %s", l.host.Name, l.node, msg))
	for _, c := range contests {
		p.out.contestNotes = append(p.out.contestNotes, contestNote{host: l.hostKey(), other: c.otherHost,
			note: fmt.Sprintf("host %s, node %s of cluster %s: %s wants other values for %s; neither writes them",
				l.host.Name, l.node, l.cluster, c.other, strings.Join(c.keys, ", "))})
	}
}

// wrote counts a Node written.
func (p *pass) wrote(l *link, u nodeUpdate) {
	nodeWritesTotal.WithLabelValues("ok").Inc()
	labelChangesTotal.WithLabelValues("set").Add(float64(len(u.labels.Set)))
	labelChangesTotal.WithLabelValues("delete").Add(float64(len(u.labels.Delete)))
	what := describeUpdate(u)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.sets += len(u.labels.Set)
	p.out.deletes += len(u.labels.Delete)
	if u.taints != nil {
		p.out.taintsReleased++
	}
	p.out.written = append(p.out.written, fmt.Sprintf("node %s of %s (host %s): %s", l.node, l.cluster, l.host.Name, what))
}

// kept records the labels of a host's Node an upsert-only source keeps.
func (p *pass) kept(l *link, keys []string) {
	if len(keys) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		p.out.retained = append(p.out.retained, fmt.Sprintf("node %s of %s: %s", l.node, l.cluster, k))
	}
}

// wouldWrite counts what a suspended source would have written to a Node.
func (p *pass) wouldWrite(u nodeUpdate) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := &p.out.pending
	w.Nodes++
	w.LabelsSet += int32(len(u.labels.Set))
	w.LabelsRemoved += int32(len(u.labels.Delete))
	if u.taints != nil {
		w.TaintsRemoved++
	}
}

// touch records a Node the pass looked at.
func (p *pass) touch(k nodeKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.nodes[k] = true
}

// waitingCount is how many hosts wait.
func (p *pass) waitingCount() int {
	n := 0
	for _, hs := range p.out.waiting {
		n += len(hs)
	}
	return n
}

// next is when the source's next pass is due: after its resync interval,
// sooner while its writes are in flight or a cluster's backoff ends, and no
// later than when the profile's lastSyncTime turns an interval old (the
// pass then stamps it). Without that bound, a backoff pass just before the
// stamp was due kept it, and it aged until the next backoff pass: up to
// twice the interval while a cluster was unreachable.
func (p *pass) next() time.Duration {
	next := p.src.resync
	for _, retry := range p.out.unreachable {
		next = min(next, retry)
	}
	if p.out.inFlight > 0 {
		next = min(next, inFlightRetry)
	}
	if !p.stamp.IsZero() {
		next = min(next, max(p.stamp.Add(p.src.resync).Sub(p.r.Now()), minStampWait))
	}
	return next
}

// minStampWait is the shortest wait for a pass that refreshes
// lastSyncTime (a pass that took longer than the time left).
const minStampWait = 100 * time.Millisecond
