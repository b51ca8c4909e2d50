package labelsync

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// secretCheckInterval is how often, at most, a cluster's kubeconfig Secret
// is read again (to notice that it was deleted, corrupted or rotated), and
// how long the diagnosis of a cluster that is not connected is reused.
const secretCheckInterval = 5 * time.Second

// kubeconfigKey is the key of a <cluster>-kubeconfig Secret that holds the
// kubeconfig, as Cluster API writes it.
const kubeconfigKey = "value"

// kubeconfigs keeps clustercache's connections in step with the
// <cluster>-kubeconfig Secrets. Every pass that uses a cluster has its
// Secret read (live, at most once per secretCheckInterval): a Secret that
// is deleted, unreadable or holds no valid kubeconfig makes the cluster
// unreachable and its old connection is closed (clustercache's ClusterFilter
// excludes it); a Secret whose content changed makes clustercache connect
// again with the new content. reconnect runs clustercache's reconcile of one
// Cluster, which (dis)connects it as the filter now says.
type kubeconfigs struct {
	secrets   client.Reader
	clusters  client.Reader
	reconnect func(ctx context.Context, cluster types.NamespacedName)
	clock     clock.PassiveClock

	mu    sync.Mutex
	state map[types.NamespacedName]*kubeconfigState
}

// kubeconfigState is what is known of one cluster's kubeconfig Secret.
type kubeconfigState struct {
	// mu serialises the checks (and reconnects) of the cluster.
	mu sync.Mutex
	// excluded: the Secret cannot be used; clustercache drops the cluster.
	// Read by the ClusterFilter under kubeconfigs.mu.
	excluded bool
	// sum is the digest of the kubeconfig in use; known once read.
	sum     [sha256.Size]byte
	known   bool
	checked time.Time
	// broken is why the Secret cannot be used (nil: it can).
	broken *unreachableError
	// logged is the Secret's last problem written to the log.
	logged string
	// kubeconfig is the last valid content, for probing the API server.
	kubeconfig []byte
	// diagnosis is why the cluster was not connected at diagnosed.
	diagnosis *unreachableError
	diagnosed time.Time
}

func newKubeconfigs(secrets, clusters client.Reader, reconnect func(context.Context, types.NamespacedName), clk clock.PassiveClock) *kubeconfigs {
	return &kubeconfigs{secrets: secrets, clusters: clusters, reconnect: reconnect, clock: clk,
		state: map[types.NamespacedName]*kubeconfigState{}}
}

// stateOf returns the cluster's state, new at first use.
func (k *kubeconfigs) stateOf(cluster types.NamespacedName) *kubeconfigState {
	k.mu.Lock()
	defer k.mu.Unlock()
	st, ok := k.state[cluster]
	if !ok {
		st = &kubeconfigState{}
		k.state[cluster] = st
	}
	return st
}

// usable reports whether clustercache may connect to the cluster: false
// while its Secret is missing, unreadable or malformed.
func (k *kubeconfigs) usable(cluster types.NamespacedName) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	st, ok := k.state[cluster]
	return !ok || !st.excluded
}

// setExcluded changes whether clustercache may connect to the cluster and
// has clustercache act on it at once (close or open the connection).
func (k *kubeconfigs) setExcluded(ctx context.Context, cluster types.NamespacedName, st *kubeconfigState, excluded bool) {
	k.mu.Lock()
	st.excluded = excluded
	k.mu.Unlock()
	k.reconnect(ctx, cluster)
}

// forget drops a deleted cluster's state.
func (k *kubeconfigs) forget(cluster types.NamespacedName) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.state, cluster)
}

// check reads the cluster's Secret unless it was read less than
// secretCheckInterval ago, and returns why it cannot be used (nil: it can).
// A Secret that became unusable closes the connection; one that came back
// or whose content changed (a rotation) opens a new one with its content.
func (k *kubeconfigs) check(ctx context.Context, cluster types.NamespacedName) error {
	st := k.stateOf(cluster)
	st.mu.Lock()
	defer st.mu.Unlock()
	now := k.clock.Now()
	if (st.known || st.broken != nil) && now.Sub(st.checked) < secretCheckInterval {
		return errOrNil(st.broken)
	}
	st.checked = now
	data, bad := k.readSecret(ctx, cluster)
	if bad != nil {
		if st.logged != bad.Error() {
			// Once per change, so the process log says it too.
			st.logged = bad.Error()
			log.FromContext(ctx).Error(bad, "kubeconfig Secret not usable", "cluster", cluster.String())
		}
		st.broken, st.known = k.provisioning(ctx, cluster, bad), false
		if !st.excluded && withdrawn(bad) {
			k.setExcluded(ctx, cluster, st, true)
		}
		return st.broken
	}
	sum := sha256.Sum256(data)
	switch {
	case st.excluded:
		k.setExcluded(ctx, cluster, st, false)
	case st.known && sum != st.sum:
		k.setExcluded(ctx, cluster, st, true)
		k.setExcluded(ctx, cluster, st, false)
	}
	st.broken, st.sum, st.known, st.kubeconfig, st.logged = nil, sum, true, data, ""
	return nil
}

// withdrawn reports a Secret that is gone, malformed, or that may not be
// read: its connection must not be used. A read that failed otherwise (the
// management API server timed out, say) makes this pass wait but keeps the
// connection.
func withdrawn(bad *unreachableError) bool {
	return bad.cause != CauseSecretUnreadable || apierrors.IsForbidden(bad.err) || apierrors.IsUnauthorized(bad.err)
}

// errOrNil returns e as an error, nil when e is nil.
func errOrNil(e *unreachableError) error {
	if e == nil {
		return nil
	}
	return e
}

// readSecret reads the cluster's kubeconfig, live, and checks that it
// parses.
func (k *kubeconfigs) readSecret(ctx context.Context, cluster types.NamespacedName) ([]byte, *unreachableError) {
	name := cluster.Name + "-kubeconfig"
	var s corev1.Secret
	err := k.secrets.Get(ctx, types.NamespacedName{Namespace: cluster.Namespace, Name: name}, &s)
	switch {
	case apierrors.IsNotFound(err):
		return nil, unreachable(cluster, CauseSecretMissing, fmt.Sprintf("Secret %s/%s does not exist", cluster.Namespace, name), err)
	case err != nil:
		return nil, unreachable(cluster, CauseSecretUnreadable, fmt.Sprintf("Secret %s/%s cannot be read: %v", cluster.Namespace, name, err), err)
	}
	data, ok := s.Data[kubeconfigKey]
	if !ok {
		return nil, unreachable(cluster, CauseKubeconfigMalformed, fmt.Sprintf("Secret %s/%s has no key %q", cluster.Namespace, name, kubeconfigKey), nil)
	}
	if _, err := clientcmd.RESTConfigFromKubeConfig(data); err != nil {
		return nil, unreachable(cluster, CauseKubeconfigMalformed,
			fmt.Sprintf("key %q of Secret %s/%s is not a usable kubeconfig: %v", kubeconfigKey, cluster.Namespace, name, err), err)
	}
	return data, nil
}

// provisioning returns why the Cluster itself cannot be connected to yet
// (it does not exist, or its infrastructure is not provisioned), which
// explains a missing Secret better than the Secret; else otherwise.
func (k *kubeconfigs) provisioning(ctx context.Context, cluster types.NamespacedName, otherwise *unreachableError) *unreachableError {
	var c clusterv1.Cluster
	err := k.clusters.Get(ctx, cluster, &c)
	switch {
	case apierrors.IsNotFound(err):
		return unreachable(cluster, CauseClusterMissing, "the Cluster object does not exist", err)
	case err == nil && !ptr.Deref(c.Status.Initialization.InfrastructureProvisioned, false):
		return unreachable(cluster, CauseNotProvisioned, "its infrastructure is not provisioned yet (status.initialization.infrastructureProvisioned)", nil)
	}
	return otherwise
}

// diagnose says why a cluster whose Secret is fine is not connected: the
// Cluster is not provisioned, or a probe of its API server with the
// Secret's kubeconfig fails (refused, timed out, authentication refused),
// or else clustercache has not connected yet. A diagnosis is reused for
// secretCheckInterval.
func (k *kubeconfigs) diagnose(ctx context.Context, cluster types.NamespacedName, notConnected error) *unreachableError {
	st := k.stateOf(cluster)
	st.mu.Lock()
	defer st.mu.Unlock()
	now := k.clock.Now()
	if st.diagnosis != nil && now.Sub(st.diagnosed) < secretCheckInterval {
		return st.diagnosis
	}
	d := k.provisioning(ctx, cluster, nil)
	if d == nil {
		d = probe(ctx, cluster, st.kubeconfig, notConnected)
	}
	st.diagnosis, st.diagnosed = d, now
	return d
}
