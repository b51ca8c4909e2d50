package operator

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// stopWhileStarting bounds how long Run waits for a manager that is asked
// to stop before its caches synced.
const stopWhileStarting = 5 * time.Second

// stopMargin is how much longer than its graceful shutdown timeout Run
// waits for a started manager to stop (it still releases its Lease and
// flushes events after the timeout) before it returns anyway.
const stopMargin = 5 * time.Second

// runUntilStopped runs mgr until ctx ends or it fails, like mgr.Start, but
// returns even when ctx ends before the manager's caches synced (say RBAC
// forbids listing Nodes): controller-runtime's manager then never returns
// from Start. Nothing needs a graceful stop at that point -- no controller
// runs, no Lease is held -- so Run returns after stopWhileStarting. A
// started manager has bound to stop (its graceful shutdown timeout and
// stopMargin): work that ignores its context (a connect, a write) cannot
// keep the process alive after that.
func runUntilStopped(ctx context.Context, mgr ctrl.Manager, bound time.Duration) error {
	started := make(chan struct{})
	if err := mgr.Add(startSignal(started)); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	select {
	case err := <-done:
		return err
	case <-started:
		return waitStopped(done, bound)
	case <-time.After(stopWhileStarting):
		mgr.GetLogger().Info(fmt.Sprintf("stopped before the caches synced; not waiting longer than %s for the manager", stopWhileStarting))
		return nil
	}
}

// startSignal is a runnable that closes its channel when the manager starts
// the runnables that need no leader, which it does once its caches synced.
type startSignal chan struct{}

// Start closes the channel and returns.
func (s startSignal) Start(context.Context) error {
	close(s)
	return nil
}

// NeedLeaderElection is false: followers start too.
func (s startSignal) NeedLeaderElection() bool { return false }

// waitStopped waits for a started manager's Start to return, at most bound.
func waitStopped(done <-chan error, bound time.Duration) error {
	select {
	case err := <-done:
		return err
	case <-time.After(bound):
		return fmt.Errorf("the controller manager did not stop within %s of the stop signal; exiting with work still in flight", bound)
	}
}

// stopping is the readiness of a replica being stopped: it fails from the
// stop signal on, while the replica still serves for ShutdownDelay.
type stopping struct{ since atomic.Pointer[time.Time] }

// check is a readiness check that fails once the stop began.
func (s *stopping) check(*http.Request) error {
	if at := s.since.Load(); at != nil {
		return fmt.Errorf("stopping since %s", at.UTC().Format(time.RFC3339))
	}
	return nil
}

// delay returns a context that ends d after ctx does; from ctx's end on
// readiness fails, so that the Service drops the replica while it still
// serves. With d 0 it returns ctx.
func (s *stopping) delay(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	delayed, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		<-ctx.Done()
		now := time.Now()
		s.since.Store(&now)
		ctrl.Log.Info("stopping: not ready, still serving while the Service drops this replica", "delay", d.String())
		<-time.After(d)
		cancel()
	}()
	return delayed
}
