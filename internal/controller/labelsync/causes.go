package labelsync

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
)

// UnreachableCause says why a workload cluster cannot be reached; it
// starts the message of its hosts' ClusterUnreachable problems.
type UnreachableCause string

// The causes label sync tells apart.
const (
	// CauseSecretMissing: the <cluster>-kubeconfig Secret does not exist.
	CauseSecretMissing UnreachableCause = "kubeconfig Secret missing"
	// CauseSecretUnreadable: reading the Secret failed (e.g. forbidden).
	CauseSecretUnreadable UnreachableCause = "kubeconfig Secret unreadable"
	// CauseKubeconfigMalformed: the Secret has no key value, or it holds
	// no usable kubeconfig.
	CauseKubeconfigMalformed UnreachableCause = "malformed kubeconfig"
	// CauseClusterMissing: the Cluster object does not exist.
	CauseClusterMissing UnreachableCause = "Cluster not found"
	// CauseNotProvisioned: the Cluster's infrastructure is not provisioned
	// yet, so nothing connects to it.
	CauseNotProvisioned UnreachableCause = "Cluster not provisioned yet"
	// CauseAuthRefused: the API server answered 401 or 403 to the
	// kubeconfig's credentials.
	CauseAuthRefused UnreachableCause = "authentication refused"
	// CauseConnectionRefused: nothing listens at the API server's address.
	CauseConnectionRefused UnreachableCause = "connection refused"
	// CauseTimedOut: the API server's address did not answer in time.
	CauseTimedOut UnreachableCause = "connection timed out"
	// CauseTLS: the TLS handshake failed (an untrusted or wrong
	// certificate).
	CauseTLS UnreachableCause = "TLS handshake failed"
	// CauseConnecting: the API server answers, and the connection is being
	// made (a new cluster, or a reconnect).
	CauseConnecting UnreachableCause = "not connected yet"
	// CauseNoAnswer: any other failure to reach the API server.
	CauseNoAnswer UnreachableCause = "API server did not answer"
)

// probeTimeout bounds the probe of the API server of a cluster that is not
// connected.
const probeTimeout = 5 * time.Second

// unreachableError is a workload cluster that cannot be reached, and why.
type unreachableError struct {
	cluster types.NamespacedName
	cause   UnreachableCause
	detail  string
	err     error
}

// unreachable builds an unreachableError.
func unreachable(cluster types.NamespacedName, cause UnreachableCause, detail string, err error) *unreachableError {
	return &unreachableError{cluster: cluster, cause: cause, detail: detail, err: err}
}

// Error says which cluster, the cause and its detail.
func (e *unreachableError) Error() string {
	return fmt.Sprintf("workload cluster %s is unreachable: %s: %s", e.cluster, e.cause, e.detail)
}

// Unwrap returns the underlying error, if any.
func (e *unreachableError) Unwrap() error { return e.err }

// causeOf classifies an error reaching an API server.
func causeOf(err error) UnreachableCause {
	var certErr *tls.CertificateVerificationError
	var authorityErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
		return CauseAuthRefused
	case errors.Is(err, syscall.ECONNREFUSED):
		return CauseConnectionRefused
	case isTimeout(err):
		return CauseTimedOut
	case errors.As(err, &certErr) || errors.As(err, &authorityErr) || errors.As(err, &hostErr):
		return CauseTLS
	case errors.Is(err, clustercache.ErrClusterNotConnected):
		return CauseConnecting
	}
	return CauseNoAnswer
}

// isTimeout reports a deadline or network timeout.
func isTimeout(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout()
}

// probe asks the API server of kubeconfig for "/" (what clustercache's
// health probe asks), within probeTimeout, and says why the cluster is not
// connected: the answer's failure, or, when it answers, that clustercache
// is connecting.
func probe(ctx context.Context, cluster types.NamespacedName, kubeconfig []byte, notConnected error) *unreachableError {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return unreachable(cluster, CauseKubeconfigMalformed, err.Error(), err)
	}
	cfg.Timeout = probeTimeout
	server, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return unreachable(cluster, CauseKubeconfigMalformed, err.Error(), err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return unreachable(cluster, CauseKubeconfigMalformed, err.Error(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	server.Path = "/"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server.String(), nil)
	if err != nil {
		return unreachable(cluster, CauseKubeconfigMalformed, err.Error(), err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return unreachable(cluster, causeOf(err), fmt.Sprintf("%s: %v", server.Host, err), err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return unreachable(cluster, CauseAuthRefused,
			fmt.Sprintf("%s answered %q to the credentials of the kubeconfig Secret: renew them", server.Host, resp.Status), nil)
	}
	return unreachable(cluster, CauseConnecting, fmt.Sprintf("%s answers; the connection is being made", server.Host), notConnected)
}
