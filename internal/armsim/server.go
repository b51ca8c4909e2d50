package armsim

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// maxBodyBytes bounds request bodies.
const maxBodyBytes = 4 << 20

// Server is a running (or ready to run) ARM simulator. All its methods are
// safe for concurrent use.
type Server struct {
	opts     Options
	st       *store
	ops      *lroTable
	throttle *throttler
	locks    resourceLocks
	actors   actors
	faults   *faultInjector
	calls    *callCounter
	perms    permissionTable
	signKey  []byte
	idHeader string
	eg       *eventGrid
	lag      graphLag
	rsaKey   signingKey

	ca      *certAuthority // nil without TLS
	tempDir string         // removed on Close

	mu      sync.Mutex
	httpSrv *http.Server
	url     string
	serveWG sync.WaitGroup
}

// New returns a Server configured by opts; call Start to listen.
func New(opts Options) (*Server, error) {
	o := opts.withDefaults()
	s := &Server{
		opts:     o,
		st:       newStore(),
		ops:      newLROTable(),
		throttle: newThrottler(o.Throttle, o.Clock),
		faults:   newFaultInjector(o.Faults, o.Seed),
		calls:    newCallCounter(),
		signKey:  make([]byte, 32),
		idHeader: o.IdentityHeader,
	}
	s.eg = newEventGrid(s, o.EventGrid, o.Seed)
	s.lag.delay = o.GraphIndexDelay
	if _, err := rand.Read(s.signKey); err != nil {
		return nil, err
	}
	if s.idHeader == "" {
		s.idHeader = randomHex(16)
	}
	if o.TLS {
		if err := s.initTLS(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// initTLS creates the CA and writes it to CADir.
func (s *Server) initTLS() error {
	dir := s.opts.CADir
	if dir == "" {
		d, err := os.MkdirTemp("", "armsim-ca-")
		if err != nil {
			return err
		}
		dir, s.tempDir = d, d
	}
	ca, err := newCertAuthority(dir)
	if err != nil {
		return fmt.Errorf("armsim: creating CA in %s: %w", dir, err)
	}
	s.ca = ca
	return nil
}

// Start listens on addr (e.g. "127.0.0.1:0" for a free port) and serves in
// the background until Close.
func (s *Server) Start(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpSrv != nil {
		return errors.New("armsim: already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("armsim: listen on %s: %w", addr, err)
	}
	scheme := "http"
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	if s.ca != nil {
		cert, err := s.ca.serverCert(ln.Addr().(*net.TCPAddr).IP, hostOf(addr))
		if err != nil {
			_ = ln.Close()
			return err
		}
		hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, hs.TLSConfig)
		scheme = "https"
	}
	s.httpSrv = hs
	s.url = scheme + "://" + urlHost(addr, ln.Addr())
	s.serveWG.Add(1)
	go func() {
		defer s.serveWG.Done()
		_ = hs.Serve(ln)
	}()
	return nil
}

// hostOf returns the host part of a listen address.
func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return h
}

// urlHost picks the host:port clients should use: the listen host if it
// was a name or a specific IP, loopback for wildcard listens.
func urlHost(addr string, bound net.Addr) string {
	_, port, _ := net.SplitHostPort(bound.String())
	h := hostOf(addr)
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		h = "127.0.0.1"
	}
	return net.JoinHostPort(h, port)
}

// Close stops serving, waits for the server goroutine and removes a
// temporary CA directory.
func (s *Server) Close() error {
	s.mu.Lock()
	hs := s.httpSrv
	s.mu.Unlock()
	var err error
	if hs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = hs.Shutdown(ctx)
		s.serveWG.Wait()
	}
	s.eg.close()
	if s.tempDir != "" {
		_ = os.RemoveAll(s.tempDir)
	}
	return err
}

// URL is the base URL (scheme://host:port) once started, e.g. the ARM
// endpoint and the authority host clients should use.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// TLS reports whether the server speaks HTTPS.
func (s *Server) TLS() bool { return s.ca != nil }

// CACertPEM returns the PEM of the CA that signed the server certificate
// (nil without TLS).
func (s *Server) CACertPEM() []byte {
	if s.ca == nil {
		return nil
	}
	return append([]byte(nil), s.ca.pem...)
}

// CAFile is the path of the CA certificate file ("" without TLS).
func (s *Server) CAFile() string {
	if s.ca == nil {
		return ""
	}
	return s.ca.file
}

// TenantID is the tenant armsim issues tokens for.
func (s *Server) TenantID() string { return s.opts.TenantID }

// Options returns the effective options (defaults filled in).
func (s *Server) Options() Options { return s.opts }

// ServeHTTP implements http.Handler: route, then the pipeline for the
// route's kind.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	rt := s.match(r)
	if rt.kind == kindAdmin {
		rt.h(s, w, r, rt)
		return
	}
	correlate(w, r)
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		s.calls.record(rt.op, rec.status)
		if s.opts.Logf != nil {
			s.opts.Logf("armsim: %s %s -> %s %d", r.Method, r.URL.Path, rt.op, rec.status)
		}
	}()
	// A write's event is queued before its answer leaves: whoever has the
	// answer can wait for the event's delivery.
	rec.onStatus = func(status int) {
		s.emitServed(r, rt, status)
		s.reconcileAfter(r, rt, status)
	}
	s.serve(rec, r, rt)
	if !rec.wrote {
		rec.WriteHeader(rec.status)
	}
}

// correlationHeader names the operation: ARM keeps the ID a client sends,
// makes one up otherwise, answers with it, and its write events carry it
// as data.correlationId.
const correlationHeader = "x-ms-correlation-request-id"

// correlate gives r a correlation ID when it has none and answers with it.
func correlate(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(correlationHeader)
	if id == "" {
		id = newUUID()
		r.Header.Set(correlationHeader, id)
	}
	w.Header().Set(correlationHeader, id)
}

// serve runs latency, auth, throttling and faults, then the handler.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt *route) {
	if !s.faults.delay(r.Context()) {
		writeError(w, newError(http.StatusServiceUnavailable, "RequestCanceled", "The request was canceled."))
		return
	}
	if rt.kind == kindARM {
		if e := s.authenticate(r); e != nil {
			writeAuthError(w, s.authorityHost(r), s.opts.TenantID, e)
			return
		}
		if !s.applyThrottle(w, r, rt) || !s.applyComputeThrottle(w, rt) || !s.applyNetworkThrottle(w, r, rt) || !s.applyLock(w, r, rt) {
			return
		}
		if rt.h != nil && needsAPIVersion(rt) && r.URL.Query().Get("api-version") == "" {
			writeError(w, errBadRequest("MissingApiVersionParameter",
				"The api-version query parameter (?api-version=) is required for all requests."))
			return
		}
	}
	scopes := []string{r.URL.Path}
	if rt.op == opGraph {
		scopes = append(scopes, graphScopes(r)...)
	}
	if f := s.faults.next(rt.op, scopes); f != nil {
		writeFault(w, rt.op, f)
		return
	}
	rt.h(s, w, r, rt)
}

// needsAPIVersion is false for the 404/405 answers.
func needsAPIVersion(rt *route) bool { return rt.op != "Unknown" }

// baseURL is scheme://host of the request, used for nextLink and LRO URLs.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// statusRecorder remembers the status written and calls onStatus (if
// set) with it before the answer goes out.
type statusRecorder struct {
	http.ResponseWriter
	status   int
	wrote    bool
	onStatus func(status int)
}

// WriteHeader records the status.
func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote && r.onStatus != nil {
		r.onStatus(code)
	}
	r.wrote = true
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Write sends the header first, as http.ResponseWriter does.
func (r *statusRecorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

// Flush forwards to the underlying writer when it can flush.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// lowerEq compares ARM identifiers case-insensitively.
func lowerEq(a, b string) bool { return strings.EqualFold(a, b) }
