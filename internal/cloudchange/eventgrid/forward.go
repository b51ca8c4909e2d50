package eventgrid

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
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

// FollowLeader makes a follower forward deliveries to the leader instead
// of answering them 503 (see AwaitLeader); call it before Start. lookup
// returns the host:port the leader's webhook serves at (the address it
// advertises), or "" while no other replica is known to lead (no holder, or
// this replica holds the Lease and is about to lead); a result at most
// maxAge old is good enough. A forwarded delivery carries exactly what
// Event Grid sent (the key in the query, the Authorization header), which
// the leader checks again; the webhook checked it already. While no leader
// answers (a takeover), the delivery is held up to Config.LeaderWait, until
// a leader answers or this replica leads, then 503 as without forwarding.
func (w *Webhook) FollowLeader(lookup func(ctx context.Context, maxAge time.Duration) (string, error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lookupLeader = lookup
}

// follower returns the leader lookup while this replica does not lead
// and forwards; nil when it leads or answers 503.
func (w *Webhook) follower() func(context.Context, time.Duration) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lookupLeader
}

// forward hands an authenticated delivery (body read already) to the
// leader and relays its answer. It returns done=false when this replica
// became the leader meanwhile: the caller then publishes the delivery
// itself. A delivery that was forwarded to this replica already is not
// forwarded again.
func (w *Webhook) forward(rw http.ResponseWriter, r *http.Request, body []byte) (done bool, ref *refusal) {
	lookup := w.follower()
	if lookup == nil || r.Header.Get(ForwardedHeader) != "" {
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
		addr, err := lookup(ctx, maxAge)
		switch {
		case err != nil:
			last = err
		case addr != "":
			resp, err := w.sendToLeader(ctx, addr, r, body)
			if err == nil {
				relay(rw, resp)
				deliveriesTotal.WithLabelValues(resultForwarded).Inc()
				w.log.V(1).Info("forwarded a delivery to the leader", "leader", addr, "status", resp.status)
				return true, nil
			}
			last = err
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

// sendToLeader POSTs the delivery to the leader at addr, with the same
// path, query and headers; an error, or a 503 of a replica that does not
// lead (any more), means another attempt. Errors never carry the URL (its
// query may hold the shared secret).
func (w *Webhook) sendToLeader(ctx context.Context, addr string, r *http.Request, body []byte) (*leaderAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, forwardAttemptTimeout)
	defer cancel()
	scheme := "http"
	if w.cfg.CertDir != "" {
		scheme = "https"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, scheme+"://"+addr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, withoutURL(err)
	}
	for k, vs := range r.Header {
		if !hopByHop[http.CanonicalHeaderKey(k)] {
			req.Header[k] = vs
		}
	}
	req.Header.Set(ForwardedHeader, "1")
	resp, err := w.forwarder.Do(req)
	if err != nil {
		return nil, withoutURL(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRelayedBody))
	if err != nil {
		return nil, withoutURL(err)
	}
	if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(NotLeaderHeader) != "" {
		return nil, errors.New(addr + " does not lead")
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

// hopByHop are the headers of one connection, not forwarded.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true,
}

// withoutURL drops the request URL (its query may hold the shared secret)
// from a client error.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
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
