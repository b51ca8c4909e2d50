package labelsync

import (
	"context"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
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

func (r *Reconciler) newPass(src *source, st *state) *pass {
	return &pass{r: r, src: src, st: st, started: r.Now(), out: outcome{
		waiting: map[v1alpha1.WaitReason][]string{}, unreachable: map[types.NamespacedName]time.Duration{},
		clusters: map[types.NamespacedName]bool{}, nodes: map[nodeKey]bool{}, hosts: map[types.NamespacedName]bool{},
		staked: map[claimant]bool{},
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
	p.r.wake(p.r.claims.Release(func(c claimant, w want) bool {
		_, down := p.out.unreachable[w.cluster] // its host still wants the Node: hold on to the claim
		return c.source == p.src.key && !p.out.staked[c] && !down
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
