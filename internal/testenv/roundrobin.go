package testenv

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// RoundRobin is one plain-HTTP address in front of several backends, as a
// Service (and an Ingress) is in front of a Deployment's replicas: each
// request goes to the next backend in turn, over a connection of its own. A
// backend that refuses the connection (its process is gone) is skipped for
// that request, as ingress-nginx passes a request to the next upstream on a
// connection error (proxy_next_upstream error) and a Service drops an
// endpoint that is not ready; a request a backend received and did not
// answer is answered 502. It counts what each backend answered.
type RoundRobin struct {
	backends []string
	ln       net.Listener
	srv      *http.Server
	client   *http.Client

	mu     sync.Mutex
	next   int
	served map[string]int
}

// StartRoundRobin serves on a free loopback port in front of backends
// (host:port each).
func StartRoundRobin(backends ...string) (*RoundRobin, error) {
	if len(backends) == 0 {
		return nil, errors.New("round robin: no backend")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &RoundRobin{backends: backends, ln: ln, served: map[string]int{},
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Addr is the front's host:port.
func (p *RoundRobin) Addr() string { return p.ln.Addr().String() }

// Served is how many requests each backend answered.
func (p *RoundRobin) Served() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.served)
}

// Close stops serving.
func (p *RoundRobin) Close() error { return p.srv.Close() }

// rotation is the backends in turn from the one whose turn it is.
func (p *RoundRobin) rotation() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.backends) == 0 {
		return nil
	}
	first := p.next
	p.next = (p.next + 1) % len(p.backends)
	return append(slices.Clone(p.backends[first:]), p.backends[:first]...)
}

func (p *RoundRobin) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	for _, backend := range p.rotation() {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+backend+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := p.client.Do(req)
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			continue // nobody listens there: the next backend
		}
		if err != nil {
			http.Error(rw, "backend "+backend+" did not answer", http.StatusBadGateway)
			return
		}
		p.relay(rw, resp, backend)
		return
	}
	http.Error(rw, "no backend listens", http.StatusBadGateway)
}

// relay copies a backend's answer and counts it.
func (p *RoundRobin) relay(rw http.ResponseWriter, resp *http.Response, backend string) {
	defer func() { _ = resp.Body.Close() }()
	for k, vs := range resp.Header {
		rw.Header()[k] = vs
	}
	rw.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(rw, resp.Body)
	p.mu.Lock()
	p.served[backend]++
	p.mu.Unlock()
}

// Remove takes backend out of the rotation, as a Service drops the
// endpoint of a Pod that is gone.
func (p *RoundRobin) Remove(backend string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends = slices.DeleteFunc(slices.Clone(p.backends), func(b string) bool { return b == backend })
	p.next = 0
}

// Set replaces the backends, as a Service's endpoints change when its Pods
// are replaced.
func (p *RoundRobin) Set(backends ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends = slices.Clone(backends)
	p.next = 0
}
