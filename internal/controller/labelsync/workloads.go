package labelsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Workloads reaches the workload clusters: a cached client per cluster and
// a watch on its Nodes. ClusterCacheWorkloads is the real one.
type Workloads interface {
	// Client returns a client of the cluster whose reads come from a cache;
	// an error when the cluster is not connected.
	Client(ctx context.Context, cluster types.NamespacedName) (client.Client, error)
	// WatchNodes makes sure the cluster's Node events reach the controller
	// (idempotent; called by every pass that uses the cluster).
	WatchNodes(ctx context.Context, cluster types.NamespacedName) error
}

// clusterCacheWorkloads reaches workload clusters through Cluster API's
// clustercache; watch adds the Node watch of one cluster; kubeconfigs
// checks the clusters' Secrets and says why a cluster is not connected.
type clusterCacheWorkloads struct {
	cc          clustercache.ClusterCache
	watch       func(ctx context.Context, cluster types.NamespacedName) error
	kubeconfigs *kubeconfigs
}

// Client implements Workloads. The cluster's Secret is checked first: the
// old connection of a cluster whose Secret went away is never used.
func (w *clusterCacheWorkloads) Client(ctx context.Context, cluster types.NamespacedName) (client.Client, error) {
	if err := w.kubeconfigs.check(ctx, cluster); err != nil {
		return nil, err
	}
	c, err := w.cc.GetClient(ctx, cluster)
	if errors.Is(err, clustercache.ErrClusterNotConnected) {
		return nil, w.kubeconfigs.diagnose(ctx, cluster, err)
	}
	return c, err
}

// WatchNodes implements Workloads.
func (w *clusterCacheWorkloads) WatchNodes(ctx context.Context, cluster types.NamespacedName) error {
	return w.watch(ctx, cluster)
}

// clusterHealth is what the controller knows about reaching one workload
// cluster.
type clusterHealth struct {
	failures int
	since    time.Time
	// retryAt ends the backoff of the last failure counted.
	retryAt time.Time
	err     string
	cause   UnreachableCause
}

const (
	// firstClusterRetry and maxClusterRetry bound the backoff of an
	// unreachable cluster's hosts: 1s, 2s, 4s, ... up to a minute (never
	// later than the source's resync).
	firstClusterRetry = time.Second
	maxClusterRetry   = time.Minute
	// inFlightRetry is how soon a pass runs again while its own Node
	// writes have not reached the cache (their watch events normally come
	// first).
	inFlightRetry = time.Second
)

// clusterFailed records a failure to reach a cluster and returns how long
// to wait before trying again. The backoff is the cluster's, whichever
// sources use it: a failure within the backoff of the last one counted (a
// pass of another source sharing the cluster) is not counted again.
func (r *Reconciler) clusterFailed(cluster types.NamespacedName, err error) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.Now()
	h, ok := r.clusters[cluster]
	if !ok {
		h = &clusterHealth{since: now}
		r.clusters[cluster] = h
	}
	h.err, h.cause = err.Error(), unreachableCause(err)
	if now.Before(h.retryAt) {
		return h.retryAt.Sub(now)
	}
	h.failures++
	wait := clusterBackoff(h.failures)
	h.retryAt = now.Add(wait)
	unreachableClusters.Set(float64(len(r.clusters)))
	return wait
}

// clusterFailures is how many consecutive attempts to reach a cluster
// failed.
func (r *Reconciler) clusterFailures(cluster types.NamespacedName) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.clusters[cluster]; ok {
		return h.failures
	}
	return 0
}

// clusterCause is why a cluster was last found unreachable ("" when it
// was not).
func (r *Reconciler) clusterCause(cluster types.NamespacedName) UnreachableCause {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.clusters[cluster]; ok {
		return h.cause
	}
	return ""
}

// clusterReached records that a cluster answered.
func (r *Reconciler) clusterReached(cluster types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropHealthLocked(cluster)
}

// forgetCluster drops what is known of a deleted Cluster.
func (r *Reconciler) forgetCluster(cluster types.NamespacedName) {
	r.mu.Lock()
	r.dropHealthLocked(cluster)
	r.mu.Unlock()
	if r.kubeconfigs != nil {
		r.kubeconfigs.forget(cluster)
	}
}

// pruneHealthLocked drops the health of the clusters no source's last pass
// used (their hosts, Machines or the Cluster went away); r.mu is held.
func (r *Reconciler) pruneHealthLocked() {
	for cluster := range r.clusters {
		used := false
		r.sources.Each(func(_ types.NamespacedName, st *state) { used = used || st.clusters[cluster] })
		if !used {
			r.dropHealthLocked(cluster)
		}
	}
}

// dropHealthLocked forgets a cluster's failures and updates the
// unreachable_clusters gauge; r.mu is held.
func (r *Reconciler) dropHealthLocked(cluster types.NamespacedName) {
	if _, ok := r.clusters[cluster]; ok {
		delete(r.clusters, cluster)
		unreachableClusters.Set(float64(len(r.clusters)))
	}
}

// clusterBackoff is the wait after the n-th consecutive failure.
func clusterBackoff(n int) time.Duration {
	d := firstClusterRetry
	for i := 1; i < n && d < maxClusterRetry; i++ {
		d *= 2
	}
	return min(d, maxClusterRetry)
}

// isUnreachable reports an error that says the cluster could not be
// reached at all (its Secret cannot be used, not connected, a network
// error, a timeout, an API server that is shutting down), as opposed to an
// answer refusing a request.
func isUnreachable(err error) bool {
	if err == nil {
		return false
	}
	var u *unreachableError
	if errors.As(err, &u) || errors.Is(err, clustercache.ErrClusterNotConnected) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	if apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED)
}

// unreachableCause is the cause an error reaching a cluster gives.
func unreachableCause(err error) UnreachableCause {
	var u *unreachableError
	if errors.As(err, &u) {
		return u.cause
	}
	return causeOf(err)
}

// describeUnreachable says why a cluster cannot be reached and what to do.
func describeUnreachable(cluster types.NamespacedName, err error) string {
	var u *unreachableError
	if errors.As(err, &u) {
		return u.Error() + "; retried with backoff"
	}
	return fmt.Sprintf("workload cluster %s is unreachable: %s: %v; retried with backoff", cluster, unreachableCause(err), err)
}
