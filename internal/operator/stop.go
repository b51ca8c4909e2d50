package operator

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// stopWhileStarting bounds how long Run waits for a manager that is asked
// to stop before its caches synced.
const stopWhileStarting = 5 * time.Second

// runUntilStopped runs mgr until ctx ends or it fails, like mgr.Start, but
// returns even when ctx ends before the manager's caches synced (say RBAC
// forbids listing Nodes): controller-runtime's manager then never returns
// from Start. Nothing needs a graceful stop at that point -- no controller
// runs, no Lease is held -- so Run returns after stopWhileStarting.
func runUntilStopped(ctx context.Context, mgr ctrl.Manager) error {
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
		return <-done // started: the manager stops within its graceful shutdown timeout
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
