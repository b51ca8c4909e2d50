package eventgrid

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// ForwardedHeader marks a delivery a follower forwarded to the leader. A
// replica that receives one while it does not lead answers 503 with
// NotLeaderHeader instead of forwarding it again, so a delivery makes at
// most one hop.
const ForwardedHeader = "X-Tagsync-Forwarded"

// NotLeaderHeader is set on the 503 of a replica that does not lead: the
// forwarding follower looks for the leader again instead of relaying it.
const NotLeaderHeader = "X-Tagsync-Not-Leader"

// Timing of a forward: a connection to the leader is given up after
// forwardDialTimeout (a deleted Pod's address answers nothing), one attempt
// after forwardAttemptTimeout; between attempts the follower waits
// forwardRetryWait and looks the leader up again, the Lease read at most
// that old.
const (
	forwardDialTimeout    = 2 * time.Second
	forwardAttemptTimeout = 5 * time.Second
	forwardRetryWait      = 250 * time.Millisecond
	leaderLookupMaxAge    = 2 * time.Second
)

// maxRelayedBody bounds the leader's answer a follower relays.
const maxRelayedBody = 64 << 10

// PeerHeader carries a replica's proof of identity (Peers.Token): a
// follower sends it with a forwarded delivery in place of the caller's
// credential, and the leader answers with its own, which the follower
// checks before it relays the answer.
const PeerHeader = "X-Tagsync-Peer"

// ErrUntrusted marks a peer, an address or an answer that is not the
// verified leader's (or a replica's): a follower never hands it a
// delivery nor relays its answer.
var ErrUntrusted = errors.New("not a verified replica")

// Peer is a replica a follower hands deliveries to.
type Peer struct {
	// Addr is the host:port its webhook serves at.
	Addr string
	// Name is its name (its Pod's), which its proof must name.
	Name string
}

// Peers proves the replicas of one installation to one another.
type Peers interface {
	// Leader returns the replica that leads, verified to serve at the
	// address it gives; the zero Peer while no other replica is known to
	// lead (no holder, or this replica is about to lead). An error
	// wrapping ErrUntrusted says the Lease names someone unverifiable. A
	// result at most maxAge old is good enough.
	Leader(ctx context.Context, maxAge time.Duration) (Peer, error)
	// Token is this replica's proof of identity.
	Token() (string, error)
	// Verify checks a proof: another replica's of this installation,
	// and with name set, that replica's. An error wrapping ErrUntrusted
	// is a refusal; any other says it could not be checked.
	Verify(ctx context.Context, token, name string) error
}

// FollowLeader makes a follower forward deliveries to the leader instead
// of answering them 503 (see AwaitLeader), and lets the leader take
// deliveries forwarded by followers; call it before Start on every
// replica. A forwarded delivery carries the body and Event Grid's headers
// but not the caller's credential (the key, the Authorization header),
// which this webhook checked already: it carries this replica's proof
// instead, and goes only to the leader peers verify, whose answer is
// relayed only with the leader's own proof. While no leader answers (a
// takeover), the delivery is held up to Config.LeaderWait, until a leader
// answers or this replica leads, then 503 as without forwarding.
func (w *Webhook) FollowLeader(peers Peers) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.peers = peers
}

// replicas returns the peers (nil without FollowLeader).
func (w *Webhook) replicas() Peers {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peers
}

// checkPeer authenticates a forwarded delivery by the forwarding
// replica's proof, and marks the answer with this replica's own.
func (w *Webhook) checkPeer(rw http.ResponseWriter, r *http.Request) *refusal {
	peers := w.replicas()
	token := r.Header.Get(PeerHeader)
	if peers == nil || token == "" {
		return &refusal{status: http.StatusUnauthorized, reason: reasonUnauthenticated,
			msg: "a forwarded delivery needs a replica's proof (" + PeerHeader + ")"}
	}
	if err := peers.Verify(r.Context(), token, ""); err != nil {
		if errors.Is(err, ErrUntrusted) {
			return &refusal{status: http.StatusForbidden, reason: reasonBadPeer, msg: "not a replica's proof", cause: err}
		}
		return &refusal{status: http.StatusServiceUnavailable, reason: reasonAuthUnavailable, msg: "the proof cannot be checked now: retry", cause: err}
	}
	own, err := peers.Token()
	if err != nil {
		return &refusal{status: http.StatusServiceUnavailable, reason: reasonAuthUnavailable, msg: "this replica cannot prove itself now: retry", cause: err}
	}
	rw.Header().Set(PeerHeader, own)
	return nil
}

// forward hands an authenticated delivery (body read already) to the
// leader and relays its answer. It returns done=false when this replica
// became the leader meanwhile: the caller then publishes the delivery
// itself. A delivery that was forwarded to this replica already is not
// forwarded again.
func (w *Webhook) forward(rw http.ResponseWriter, r *http.Request, body []byte) (done bool, ref *refusal) {
	peers := w.replicas()
	if peers == nil || r.Header.Get(ForwardedHeader) != "" {
		return true, notLeader(rw)
	}
	ctx, cancel := context.WithTimeout(r.Context(), w.cfg.LeaderWait)
	defer cancel()
	maxAge := leaderLookupMaxAge
	var last error
	for {
		if w.leader() {
			return false, nil
		}
		leader, err := peers.Leader(ctx, maxAge)
		switch {
		case err != nil:
			last = w.untrusted(err)
		case leader.Addr != "":
			resp, err := w.sendToLeader(ctx, peers, leader, r, body)
			if err == nil {
				relay(rw, resp)
				deliveriesTotal.WithLabelValues(resultForwarded).Inc()
				w.log.V(1).Info("forwarded a delivery to the leader", "leader", leader.Name, "address", leader.Addr, "status", resp.status)
				return true, nil
			}
			last = w.untrusted(err)
		default:
			last = errors.New("no leader known")
		}
		maxAge = forwardRetryWait
		select {
		case <-w.electedChan():
		case <-time.After(forwardRetryWait):
		case <-ctx.Done():
			rw.Header().Set("Retry-After", retryAfter)
			return true, &refusal{status: http.StatusServiceUnavailable, reason: reasonNoLeader,
				msg: "no leader answered in time: retry", cause: last}
		}
	}
}

// untrusted counts and logs an unverifiable leader, address or answer,
// and returns err.
func (w *Webhook) untrusted(err error) error {
	if errors.Is(err, ErrUntrusted) {
		untrustedTotal.WithLabelValues().Inc()
		w.log.Info("WARNING: not forwarding to an unverified leader", "why", err.Error())
	}
	return err
}

// notLeader answers 503 for a replica that neither leads nor forwards.
func notLeader(rw http.ResponseWriter) *refusal {
	rw.Header().Set("Retry-After", retryAfter)
	rw.Header().Set(NotLeaderHeader, "1")
	return &refusal{status: http.StatusServiceUnavailable, reason: reasonNotLeader, msg: "this replica is not the leader: retry"}
}

// leaderAnswer is the leader's answer to a forwarded delivery.
type leaderAnswer struct {
	status int
	header http.Header
	body   []byte
}

// sendToLeader POSTs the delivery to the leader, with the same path and
// headers but without the caller's credential (the query, which may hold
// the key, Authorization and KeyHeader), with this replica's proof
// instead. An error means another attempt: no answer, a 503 of a replica
// that does not lead (any more), or an answer without the leader's proof.
func (w *Webhook) sendToLeader(ctx context.Context, peers Peers, leader Peer, r *http.Request, body []byte) (*leaderAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, forwardAttemptTimeout)
	defer cancel()
	own, err := peers.Token()
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if w.cfg.CertDir != "" {
		scheme = "https"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, scheme+"://"+leader.Addr+r.URL.EscapedPath(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range r.Header {
		if !notForwarded[http.CanonicalHeaderKey(k)] {
			req.Header[k] = vs
		}
	}
	req.Header.Set(ForwardedHeader, "1")
	req.Header.Set(PeerHeader, own)
	resp, err := w.forwarder.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRelayedBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(NotLeaderHeader) != "" {
		return nil, errors.New(leader.Name + " does not lead")
	}
	proof := resp.Header.Get(PeerHeader)
	if proof == "" {
		return nil, fmt.Errorf("%w: the answer at %s (status %d) carries no proof of %s", ErrUntrusted, leader.Addr, resp.StatusCode, leader.Name)
	}
	if err := peers.Verify(ctx, proof, leader.Name); err != nil {
		return nil, fmt.Errorf("the answer at %s: %w", leader.Addr, err)
	}
	return &leaderAnswer{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// relayedHeaders are the leader's answer headers a follower passes on.
var relayedHeaders = []string{"Content-Type", "Retry-After", "WWW-Authenticate", "Allow"}

// relay writes the leader's answer.
func relay(rw http.ResponseWriter, a *leaderAnswer) {
	for _, k := range relayedHeaders {
		if v := a.header.Get(k); v != "" {
			rw.Header().Set(k, v)
		}
	}
	rw.WriteHeader(a.status)
	_, _ = rw.Write(a.body)
}

// notForwarded are the request headers a follower does not pass on: those
// of one connection, the caller's credential, and the forwarding markers
// it sets itself.
var notForwarded = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true,
	"Authorization": true, "Cookie": true, http.CanonicalHeaderKey(KeyHeader): true,
	http.CanonicalHeaderKey(PeerHeader): true, http.CanonicalHeaderKey(ForwardedHeader): true,
}

// newForwarder is the client a follower forwards with. Over TLS it accepts
// only the certificate this replica serves itself (every replica mounts the
// same Secret), so a delivery's credential goes to no one else at the
// leader's address; ownCert returns that certificate.
func newForwarder(ownCert func() (*tls.Certificate, error)) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: forwardDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: forwardDialTimeout,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	tr.TLSClientConfig = &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The leader is reached by its Pod IP, which its certificate (the
		// public host name's) does not name: the peer is verified by being
		// exactly this replica's own certificate instead.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			return samePeer(cs.PeerCertificates, ownCert)
		},
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// samePeer accepts a peer whose leaf certificate is the one ownCert
// returns.
func samePeer(peer []*x509.Certificate, ownCert func() (*tls.Certificate, error)) error {
	if ownCert == nil {
		return errors.New("no certificate of its own to compare the leader's with")
	}
	own, err := ownCert()
	if err != nil {
		return err
	}
	if len(peer) == 0 || own == nil || len(own.Certificate) == 0 || !bytes.Equal(peer[0].Raw, own.Certificate[0]) {
		return errors.New("the leader's certificate is not this replica's")
	}
	return nil
}
