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
// clustercache; watch adds the Node watch of one cluster.
type clusterCacheWorkloads struct {
	cc    clustercache.ClusterCache
	watch func(ctx context.Context, cluster types.NamespacedName) error
}

// Client implements Workloads.
func (w *clusterCacheWorkloads) Client(ctx context.Context, cluster types.NamespacedName) (client.Client, error) {
	return w.cc.GetClient(ctx, cluster)
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
	err      string
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
// to wait before trying again.
func (r *Reconciler) clusterFailed(cluster types.NamespacedName, err error) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.clusters[cluster]
	if !ok {
		h = &clusterHealth{since: r.now()}
		r.clusters[cluster] = h
	}
	h.failures++
	h.err = err.Error()
	unreachableClusters.Set(float64(r.unreachableLocked()))
	return clusterBackoff(h.failures)
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

// clusterReached records that a cluster answered.
func (r *Reconciler) clusterReached(cluster types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.clusters[cluster]; ok {
		delete(r.clusters, cluster)
		unreachableClusters.Set(float64(r.unreachableLocked()))
	}
}

// unreachableLocked counts the clusters currently failing; r.mu is held.
func (r *Reconciler) unreachableLocked() int { return len(r.clusters) }

// clusterBackoff is the wait after the n-th consecutive failure.
func clusterBackoff(n int) time.Duration {
	d := firstClusterRetry
	for i := 1; i < n && d < maxClusterRetry; i++ {
		d *= 2
	}
	return min(d, maxClusterRetry)
}

// isUnreachable reports an error that says the cluster could not be
// reached at all (not connected, a network error, a timeout, an API server
// that is shutting down), as opposed to an answer refusing a request.
func isUnreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, clustercache.ErrClusterNotConnected) || errors.Is(err, context.DeadlineExceeded) {
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

// describeUnreachable says why a cluster cannot be reached and what to do.
func describeUnreachable(cluster types.NamespacedName, err error) string {
	if errors.Is(err, clustercache.ErrClusterNotConnected) {
		return fmt.Sprintf("workload cluster %s is not connected: check its Secret %s-kubeconfig (key value) and that its API server answers; retried with backoff",
			cluster, cluster.Name)
	}
	return fmt.Sprintf("workload cluster %s did not answer: %v; retried with backoff", cluster, err)
}
