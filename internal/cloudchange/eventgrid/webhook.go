package eventgrid

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/lru"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

// SourceName names the source in logs, metrics and Change.Source.
const SourceName = "eventgrid"

// Server timeouts: a delivery is at most a few MiB, and Event Grid waits 30s
// for an answer.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
)

// Webhook receives Event Grid deliveries and publishes their changes. It is
// an cloudchange.Source and a controller-runtime Runnable that runs on every
// replica (NeedLeaderElection false).
type Webhook struct {
	cfg  Config
	sink cloudchange.Sink
	auth authenticator
	log  logr.Logger
	now  func() time.Time

	recentMu sync.Mutex
	recent   *lru.Cache

	mu      sync.Mutex
	serving serving
	probed  probeState
	elected <-chan struct{}
	// peers prove the replicas to one another (FollowLeader); getCert
	// is the certificate served, which the leader's must be.
	peers     Peers
	getCert   func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	forwarder *http.Client
}

var (
	_ cloudchange.Source             = (*Webhook)(nil)
	_ manager.LeaderElectionRunnable = (*Webhook)(nil)
)

// New builds a webhook from a valid configuration, reading the secret file
// if one is configured. It does not listen until Start.
func New(cfg Config, sink cloudchange.Sink) (*Webhook, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, errors.New("eventgrid: no sink to publish to")
	}
	cfg = cfg.withDefaults()
	w := &Webhook{cfg: cfg, sink: sink, log: ctrl.Log.WithName(SourceName), now: time.Now,
		recent:  lru.New(cfg.DuplicateIDs),
		serving: serving{health: cloudchange.Health{Reason: "not started", Since: time.Now()}}}
	w.forwarder = newForwarder(w.ownCert)
	if cfg.SecretFile != "" {
		keys, err := newKeyFile(cfg.SecretFile)
		if err != nil {
			return nil, err
		}
		w.auth.keys = keys
	}
	if cfg.TenantID != "" {
		w.auth.bearer = &bearerAuth{cfg: cfg}
	}
	return w, nil
}

// AwaitLeader makes the webhook publish only once elected is closed (give
// it the manager's Elected()); call it before Start. Until then deliveries
// are forwarded to the leader (FollowLeader), or without FollowLeader
// answered 503 with Retry-After, and Event Grid redelivers them, maybe to
// another replica behind the Service: every replica serves, only the
// leader runs the controllers that consume the changes. Handshakes are
// answered on every replica. Without AwaitLeader the webhook publishes at
// once (a single replica, or leader election off).
func (w *Webhook) AwaitLeader(elected <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.elected = elected
}

// Name implements cloudchange.Source.
func (w *Webhook) Name() string { return SourceName }

// Cloud is the cloud whose changes the webhook receives: "azure".
func (w *Webhook) Cloud() string { return "azure" }

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica serves, see AwaitLeader.
func (w *Webhook) NeedLeaderElection() bool { return false }

// Health implements cloudchange.Source: up while the listener serves and,
// with a PublicURL, the public endpoint reaches it.
func (w *Webhook) Health() cloudchange.Health {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.serving.health
	if reason := w.probeDown(); h.Up && reason != "" {
		h.Up, h.Reason, h.Since = false, reason, w.probed.since
	}
	return h
}

// Addr is the listener's address while it serves, else "".
func (w *Webhook) Addr() string { return w.state().addr }

// serving is what Health and Addr report.
type serving struct {
	health cloudchange.Health
	addr   string
}

// state reads what Health and Addr report, together.
func (w *Webhook) state() serving {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.serving
}

// Handler serves the endpoint at Config.Path (and answers 404 elsewhere).
func (w *Webhook) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(w.cfg.Path, w)
	return mux
}

// Start serves until ctx ends, then shuts down within
// Config.ShutdownTimeout. It returns an error only if it cannot serve.
func (w *Webhook) Start(ctx context.Context) error {
	srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout}
	ln, err := net.Listen("tcp", w.cfg.BindAddress)
	if err != nil {
		w.setServing("", err.Error())
		return fmt.Errorf("eventgrid: %w", err)
	}
	serve, err := w.servingMode(ctx, srv)
	if err != nil {
		_ = ln.Close()
		w.setServing("", err.Error())
		return err
	}
	served := make(chan error, 1)
	go func() { served <- serve(ln) }()
	w.setServing(ln.Addr().String(), "")
	if w.cfg.PublicURL != "" {
		go w.probeLoop(ctx)
	}
	w.log.Info("serving Event Grid deliveries", "address", ln.Addr().String(), "path", w.cfg.Path, "tls", w.cfg.CertDir != "")
	select {
	case <-ctx.Done():
		w.shutdown(ctx, srv)
		return nil
	case err := <-served:
		w.setServing("", err.Error())
		return fmt.Errorf("eventgrid: serving: %w", err)
	}
}

// shutdown stops srv, letting deliveries in flight finish within
// Config.ShutdownTimeout.
func (w *Webhook) shutdown(ctx context.Context, srv *http.Server) {
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(stop); err != nil {
		w.log.Info("deliveries still in flight at the shutdown deadline were cut", "error", err.Error())
		_ = srv.Close()
	}
	w.setServing("", "stopped")
}

// servingMode configures srv for the certificate directory (reloaded when
// its files change, until ctx ends) and returns how to serve on a listener;
// without a certificate directory it serves plain HTTP.
func (w *Webhook) servingMode(ctx context.Context, srv *http.Server) (func(net.Listener) error, error) {
	if w.cfg.CertDir == "" {
		w.log.Info("WARNING: serving plain HTTP (no certificate directory): terminate TLS in front, " +
			"deliveries carry their credential in the URL or a header")
		return srv.Serve, nil
	}
	cw, err := certwatcher.New(filepath.Join(w.cfg.CertDir, "tls.crt"), filepath.Join(w.cfg.CertDir, "tls.key"))
	if err != nil {
		return nil, fmt.Errorf("eventgrid: certificate: %w", err)
	}
	go func() {
		if err := cw.Start(ctx); err != nil {
			w.log.Error(err, "watching the certificate files stopped")
		}
	}()
	srv.TLSConfig = &tls.Config{GetCertificate: cw.GetCertificate, MinVersion: tls.VersionTLS12}
	w.mu.Lock()
	w.getCert = cw.GetCertificate
	w.mu.Unlock()
	return func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }, nil
}

// setServing records that the listener serves at addr, or, with addr "",
// why it does not.
func (w *Webhook) setServing(addr, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := &w.serving.health
	w.serving.addr = addr
	h.Up, h.Reason, h.Since = addr != "", reason, w.now()
}

// delivered records a publish in the health.
func (w *Webhook) delivered() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.serving.health.LastDelivery = w.now()
}

// leader says whether this replica may publish.
func (w *Webhook) leader() bool {
	w.mu.Lock()
	elected := w.elected
	w.mu.Unlock()
	if elected == nil {
		return true
	}
	select {
	case <-elected:
		return true
	default:
		return false
	}
}

// electedChan is the channel AwaitLeader gave (nil without it).
func (w *Webhook) electedChan() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.elected
}

// ownCert is the certificate this replica serves (TLS only).
func (w *Webhook) ownCert() (*tls.Certificate, error) {
	w.mu.Lock()
	get := w.getCert
	w.mu.Unlock()
	if get == nil {
		return nil, errors.New("not serving TLS")
	}
	return get(nil)
}

// firstTime records id and says whether it was not seen recently.
func (w *Webhook) firstTime(id string) bool {
	w.recentMu.Lock()
	defer w.recentMu.Unlock()
	if _, seen := w.recent.Get(id); seen {
		return false
	}
	w.recent.Add(id, struct{}{})
	return true
}
