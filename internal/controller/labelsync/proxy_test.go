package labelsync_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// proxy is a TCP proxy on loopback in front of an API server, so a test can
// take a workload cluster's API server away (Stop: the port refuses
// connections and open ones are cut, as when the server is down) and bring
// it back on the same address (Start) without touching the real server.
type proxy struct {
	t      testing.TB
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// startProxy starts a proxy to target (host:port) on a free loopback port;
// it stops when the test ends.
func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	p := &proxy{t: t, target: target, addr: "127.0.0.1:0", conns: map[net.Conn]bool{}}
	p.Start()
	t.Cleanup(p.Stop)
	return p
}

// hostPort is the host:port of an API server URL.
func hostPort(t testing.TB, server string) string {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// URL is the proxy's https URL.
func (p *proxy) URL() string { return "https://" + p.addr }

// Start listens (again) on the proxy's address.
func (p *proxy) Start() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy listen on %s: %v", p.addr, err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() { p.serve(ln) })
}

// Stop closes the listener and every open connection, and waits until they
// are gone.
func (p *proxy) Stop() {
	p.mu.Lock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *proxy) serve(ln net.Listener) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		if !p.track(in, out) {
			return
		}
		p.wg.Go(func() { p.pipe(in, out) })
		p.wg.Go(func() { p.pipe(out, in) })
	}
}

// track records an open pair of connections, unless the proxy stopped.
func (p *proxy) track(in, out net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		_, _ = in.Close(), out.Close()
		return false
	}
	p.conns[in], p.conns[out] = true, true
	return true
}

// pipe copies one way and closes both ends when either side ends.
func (p *proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_, _ = dst.Close(), src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}
