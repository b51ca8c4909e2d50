package operator

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tagsync/tagsync/internal/testenv"
)

// logLines collects a logger's lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

// matching returns the lines containing s.
func (l *logLines) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// TestCancelStopsTheLeaderWithoutErrors starts the manager with leader
// election and secure metrics against a real API server, waits until it
// leads, cancels its context (what SIGTERM does to `tagsync run`) and
// checks that Start returns nil, that the leader elector's stop ("leader
// election lost", which controller-runtime reports on every stop) is logged,
// and that nothing is logged at error level.
func TestCancelStopsTheLeaderWithoutErrors(t *testing.T) {
	kube := testenv.Start(t)
	logs := &logLines{}
	o := DefaultOptions()
	o.MetricsAddr, o.ProbeAddr = "127.0.0.1:0", "127.0.0.1:0"
	o.LeaderElectionNamespace = "default"
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
	o.Logger = funcr.New(logs.add, funcr.Options{})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := New(ctx, kube.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	select {
	case <-mgr.Elected():
	case err := <-stopped:
		t.Fatalf("the manager stopped before it led: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the manager did not lead within 30s")
	}

	cancel()
	if err := <-stopped; err != nil {
		t.Fatalf("Start returned %v after the cancel, want nil", err)
	}
	testenv.Eventually(t, 10*time.Second, "the leader elector's stop in the log", func() string {
		if len(logs.matching(errLeaderElectionLost)) == 0 {
			return "not logged yet"
		}
		return ""
	})
	if errs := logs.matching(`"error"=`); len(errs) > 0 {
		t.Fatalf("logged at error level while stopping:\n%s", strings.Join(errs, "\n"))
	}
}

// TestStopIsBoundedWhenWorkIgnoresItsContext starts the manager with a
// runnable that never returns (work that ignores its context, as a connect
// or a write can), cancels its context once it runs (what SIGTERM does)
// and waits for runUntilStopped to return: it must, within twice the bound
// Run gives it (the graceful shutdown timeout and stopMargin), and say that
// work was still in flight.
func TestStopIsBoundedWhenWorkIgnoresItsContext(t *testing.T) {
	kube := testenv.Start(t)
	o := DefaultOptions()
	o.MetricsAddr, o.ProbeAddr, o.LeaderElection = "0", "0", false
	o.GracefulShutdownTimeout = time.Second
	o.Controllers, o.SkipNameValidation = []string{"labelsync"}, true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := New(ctx, kube.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	running, stuck := make(chan struct{}), make(chan struct{})
	defer close(stuck)
	if err := mgr.Add(manager.RunnableFunc(func(context.Context) error {
		close(running)
		<-stuck
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	bound := o.gracefulShutdown() + stopMargin
	stopped := make(chan error, 1)
	go func() { stopped <- runUntilStopped(ctx, mgr, bound) }()
	select {
	case <-running:
	case err := <-stopped:
		t.Fatalf("the manager stopped before the runnable ran: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the runnable did not run within 30s")
	}
	cancel()
	select {
	case err := <-stopped:
		if err == nil {
			t.Fatal("runUntilStopped returned nil with a runnable still running, want an error saying so")
		}
	case <-time.After(2 * bound):
		t.Fatalf("runUntilStopped did not return within %s of the cancel", 2*bound)
	}
}
