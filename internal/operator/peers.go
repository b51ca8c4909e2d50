package operator

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/lru"

	"github.com/tagsync/tagsync/internal/cloudchange/eventgrid"
)

// PeerAudience is the audience of the replicas' peer tokens: service
// account tokens the kubelet projects into each Pod (the chart's
// "peer-token" volume) for this audience only, so the API server accepts
// them from no one and a token that leaks opens nothing but this check.
const PeerAudience = "tagsync.io/events-forward"

// Claims the API server's TokenReview adds for a token bound to a Pod.
const (
	podNameExtra = "authentication.kubernetes.io/pod-name"
	podUIDExtra  = "authentication.kubernetes.io/pod-uid"
)

// How long a TokenReview's verdict is reused, and how many are kept: a
// token is re-read from its file for every forward, and the kubelet
// rotates it long before it expires.
const (
	reviewTTL   = time.Minute
	reviewCache = 256
)

// identity is who a peer token belongs to: the service account's user
// name and the Pod it is bound to.
type identity struct {
	user, pod, podUID string
}

// namespace and serviceAccount split the user name
// system:serviceaccount:<namespace>:<name>.
func (id identity) namespace() string      { return saPart(id.user, 0) }
func (id identity) serviceAccount() string { return saPart(id.user, 1) }

func saPart(user string, i int) string {
	parts := strings.Split(strings.TrimPrefix(user, "system:serviceaccount:"), ":")
	if len(parts) != 2 {
		return ""
	}
	return parts[i]
}

// peers proves the replicas to one another (eventgrid.Peers): each
// presents its Pod-bound token for PeerAudience, which the other checks
// with the API server (TokenReview); the leader is the Pod its Lease
// names, running under the same service account at the address it
// advertises.
type peers struct {
	tokenFile string
	reviews   authenticationv1client.TokenReviewInterface
	pods      corev1client.PodInterface
	lock      *leaderLock
	self      identity

	mu       sync.Mutex
	verdicts *lru.Cache // sha256 of a token → verdict
	// leader is the last verification of the Lease's holder (guarded by
	// mu): the Pod is read again only when the holder or its address
	// changed, or the verification is older than the caller accepts.
	leader verified
}

// verified is one verification of a holder at an address.
type verified struct {
	holder, addr string
	at           time.Time
	peer         eventgrid.Peer
	err          error
}

// verdict is a cached TokenReview.
type verdict struct {
	id  identity
	err error
	at  time.Time
}

var _ eventgrid.Peers = (*peers)(nil)

// newPeers reads and reviews this replica's own token, which must be bound
// to its Pod: the Pod's name starts the Lease identity, so that followers
// find the leader's Pod.
func newPeers(ctx context.Context, cfg *rest.Config, tokenFile string) (*peers, error) {
	auth, err := authenticationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	p := &peers{tokenFile: tokenFile, reviews: auth.TokenReviews(), verdicts: lru.New(reviewCache)}
	token, err := p.Token()
	if err != nil {
		return nil, err
	}
	id, err := p.review(ctx, token)
	if err != nil {
		return nil, fmt.Errorf("the peer token %s: %w", tokenFile, err)
	}
	if id.pod == "" || id.namespace() == "" {
		return nil, fmt.Errorf("the peer token %s is not a service account token bound to this replica's Pod "+
			"(project it with a serviceAccountToken volume for the audience %s)", tokenFile, PeerAudience)
	}
	p.self, p.pods = id, core.Pods(id.namespace())
	return p, nil
}

// Token implements eventgrid.Peers: the token file's content, re-read each
// time (the kubelet rotates it).
func (p *peers) Token() (string, error) {
	data, err := os.ReadFile(p.tokenFile)
	if err != nil {
		return "", fmt.Errorf("reading the peer token: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("the peer token file %s is empty", p.tokenFile)
	}
	return token, nil
}

// Verify implements eventgrid.Peers: the token is a replica's of this
// installation (the same service account), and with pod set, the one of
// that Pod.
func (p *peers) Verify(ctx context.Context, token, pod string) error {
	id, err := p.review(ctx, token)
	if err != nil {
		return err
	}
	if id.user != p.self.user {
		return fmt.Errorf("%w: the token is %s's, not a replica's (%s)", eventgrid.ErrUntrusted, id.user, p.self.user)
	}
	if pod != "" && id.pod != pod {
		return fmt.Errorf("%w: the token is bound to Pod %q, not the leader %q", eventgrid.ErrUntrusted, id.pod, pod)
	}
	return nil
}

// review asks the API server whose token this is, reusing a verdict up to
// reviewTTL old (refusals too, so a stream of made-up tokens costs one
// review each a minute).
func (p *peers) review(ctx context.Context, token string) (identity, error) {
	key := sha256.Sum256([]byte(token))
	p.mu.Lock()
	if v, ok := p.verdicts.Get(key); ok && time.Since(v.(verdict).at) < reviewTTL {
		p.mu.Unlock()
		return v.(verdict).id, v.(verdict).err
	}
	p.mu.Unlock()
	tr, err := p.reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{
		Token: token, Audiences: []string{PeerAudience}}}, metav1.CreateOptions{})
	if err != nil {
		return identity{}, fmt.Errorf("reviewing a peer token: %w", err) // not cached: the API may answer next time
	}
	v := verdict{at: time.Now()}
	switch st := tr.Status; {
	case !st.Authenticated:
		v.err = fmt.Errorf("%w: the API server does not accept the token for %s: %s", eventgrid.ErrUntrusted, PeerAudience, st.Error)
	default:
		v.id = identity{user: st.User.Username, pod: first(st.User.Extra[podNameExtra]), podUID: first(st.User.Extra[podUIDExtra])}
	}
	p.mu.Lock()
	p.verdicts.Add(key, v)
	p.mu.Unlock()
	return v.id, v.err
}

func first(v authenticationv1.ExtraValue) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// Leader implements eventgrid.Peers: the Lease's holder, when it is
// another replica whose Pod is running, not being deleted, under this
// replica's service account, at the IP the Lease advertises. The zero
// Peer when no holder is known or the holder is this replica. The Lease
// and the verification are reused up to maxAge, so deliveries that flow
// read the Lease and the Pod at most once per maxAge.
func (p *peers) Leader(ctx context.Context, maxAge time.Duration) (eventgrid.Peer, error) {
	holder, addr, err := p.lock.holder(ctx, maxAge)
	if err != nil || holder == "" || holder == p.lock.Identity() {
		return eventgrid.Peer{}, err
	}
	p.mu.Lock()
	last := p.leader
	p.mu.Unlock()
	if last.holder == holder && last.addr == addr && time.Since(last.at) <= maxAge {
		return last.peer, last.err
	}
	peer, err := p.verify(ctx, holder, addr)
	if err == nil || errors.Is(err, eventgrid.ErrUntrusted) { // an API error is not kept: the next call reads again
		p.mu.Lock()
		p.leader = verified{holder: holder, addr: addr, at: time.Now(), peer: peer, err: err}
		p.mu.Unlock()
	}
	return peer, err
}

// verify reads the Pod holder names and checks it may be handed deliveries
// at addr.
func (p *peers) verify(ctx context.Context, holder, addr string) (eventgrid.Peer, error) {
	name, _, _ := strings.Cut(holder, "_")
	if addr == "" {
		return eventgrid.Peer{}, fmt.Errorf("the leader %s advertises no webhook address", name)
	}
	pod, err := p.pods.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return eventgrid.Peer{}, fmt.Errorf("%w: the Lease names Pod %s, which does not exist", eventgrid.ErrUntrusted, name)
	case err != nil:
		return eventgrid.Peer{}, fmt.Errorf("reading the leader's Pod: %w", err)
	}
	if err := p.trusted(pod, addr); err != nil {
		return eventgrid.Peer{}, fmt.Errorf("%w: %v", eventgrid.ErrUntrusted, err)
	}
	return eventgrid.Peer{Addr: addr, Name: name}, nil
}

// trusted checks that pod may be handed deliveries at addr.
func (p *peers) trusted(pod *corev1.Pod, addr string) error {
	switch {
	case pod.DeletionTimestamp != nil:
		return fmt.Errorf("the leader's Pod %s is being deleted", pod.Name)
	case pod.Status.Phase != corev1.PodRunning:
		return fmt.Errorf("the leader's Pod %s is %s, not Running", pod.Name, pod.Status.Phase)
	case pod.Spec.ServiceAccountName != p.self.serviceAccount():
		return fmt.Errorf("the leader's Pod %s runs as %q, not %q", pod.Name, pod.Spec.ServiceAccountName, p.self.serviceAccount())
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("the advertised address %q: %v", addr, err)
	}
	for _, ip := range pod.Status.PodIPs {
		if ip.IP == host {
			return nil
		}
	}
	if pod.Status.PodIP == host {
		return nil
	}
	return fmt.Errorf("the Lease advertises %s, which is not an IP of the leader's Pod %s (%s)", host, pod.Name, pod.Status.PodIP)
}
