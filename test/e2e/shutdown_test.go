package e2e_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// gracefulShutdown is the --graceful-shutdown-timeout the SIGTERM test
// gives `tagsync run`; shutdownBound is how long after SIGTERM the process
// promises to exit at the latest (that timeout and a 5s margin).
const (
	gracefulShutdown = 5 * time.Second
	shutdownBound    = gracefulShutdown + 5*time.Second
)

// silentClusters is how many workload clusters the SIGTERM test points at
// the silent API server.
const silentClusters = 4

// TestSIGTERMStopsLabelSyncWhileConnecting runs the real `tagsync run`
// with label sync on and workload clusters whose API server accepts TCP
// connections and never answers (a listener that holds them), so that
// clustercache's connects and the controller's probes are in flight; sends
// SIGTERM while they are; and waits for the process to exit, with a
// deadline of twice its shutdown bound (what is asserted is that it exits
// at all, not how fast).
func TestSIGTERMStopsLabelSyncWhileConnecting(t *testing.T) {
	installLabelSyncCRDs(t)
	ctx := context.Background()
	const ns = "ls-sigterm"
	ensureNamespace(ctx, t, ns)
	silent := startSilentServer(t)
	c := labelSyncClient(t)
	create := createDeletedAtEnd(t, ctx, c)
	mk := lsObjects{t: t, ctx: ctx, c: c, ns: ns, create: create}
	for i := range silentClusters {
		name := fmt.Sprintf("silent-%d", i)
		mk.connectedCluster(name, kubeconfigFor(t, "https://"+silent.addr()))
		mk.hostOn(name+"-host", "silent", name, name+"-node", map[string]string{lsLabel: lsValue})
	}
	mk.profile("silent")

	p := startTagsync(t, "tagsync labelsync (SIGTERM while connecting)",
		"--kubeconfig="+writeKubeconfig(t, ""), "--controllers=labelsync", "--azure-auth-mode=default",
		"--leader-elect=false", "--namespaces="+ns, "--graceful-shutdown-timeout="+gracefulShutdown.String())
	eventually(t, "connections to the silent API server held open", func() string {
		if n := silent.open(); n < 2 {
			return fmt.Sprintf("%d open", n)
		}
		return ""
	})
	open, signalled := silent.open(), time.Now()
	must(t, p.cmd.Process.Signal(syscall.SIGTERM))
	eventuallyWithin(t, 2*shutdownBound, "tagsync to exit after SIGTERM", func() string {
		if p.running() {
			return "still running"
		}
		return ""
	})
	t.Logf("exited (%v) about %s after SIGTERM, with %d connection(s) to the silent API server open then",
		p.waitErr, time.Since(signalled).Round(100*time.Millisecond), open)
}

// kubeconfigFor is the admin kubeconfig of the test API server with its
// server replaced by server.
func kubeconfigFor(t *testing.T, server string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kube.KubeConfig)
	must(t, err)
	for _, cl := range cfg.Clusters {
		cl.Server = server
	}
	out, err := clientcmd.Write(*cfg)
	must(t, err)
	return out
}

// silentServer accepts TCP connections on loopback and never answers:
// an API server that is up but hangs, so every request to it waits for
// its client's timeout.
type silentServer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]bool
}

// startSilentServer listens on a free loopback port until the test ends.
func startSilentServer(t *testing.T) *silentServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	s := &silentServer{ln: ln, conns: map[net.Conn]bool{}}
	go s.serve()
	t.Cleanup(s.close)
	return s
}

func (s *silentServer) addr() string { return s.ln.Addr().String() }

// serve accepts connections and holds each until its client closes it.
func (s *silentServer) serve() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[conn] = true
		s.mu.Unlock()
		go s.hold(conn)
	}
}

// hold reads (and drops) what the client sends until it closes.
func (s *silentServer) hold(conn net.Conn) {
	buf := make([]byte, 4096)
	for {
		if _, err := conn.Read(buf); err != nil {
			break
		}
	}
	s.mu.Lock()
	delete(s.conns, conn)
	s.mu.Unlock()
	_ = conn.Close()
}

// open counts the connections clients hold open.
func (s *silentServer) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// close stops listening and closes the connections still open.
func (s *silentServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for conn := range s.conns {
		_ = conn.Close()
	}
}
