package testenv

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reconciled is what one synchronous Reconcile call returned, with
// assertions on it: controller suites call a Reconciler directly (no
// manager, no workqueue) to check what it asks of the workqueue.
type Reconciled struct {
	t      testing.TB
	Result reconcile.Result
	Err    error
}

// Reconcile calls r.Reconcile for key and returns what it returned. A
// call that fails on a conflict (the manager's own reconciler wrote the
// object since r's cache read it) is made again, as the workqueue would,
// for up to conflictRetries.
func Reconcile(ctx context.Context, t testing.TB, r reconcile.Reconciler, key types.NamespacedName) Reconciled {
	t.Helper()
	deadline := time.Now().Add(conflictRetries)
	for {
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
		if !apierrors.IsConflict(err) || time.Now().After(deadline) {
			return Reconciled{t: t, Result: res, Err: err}
		}
		time.Sleep(pollInterval)
	}
}

// conflictRetries bounds how long Reconcile retries a call that conflicts.
const conflictRetries = 10 * time.Second

// Requeue fails the test unless the call succeeded and asked for its next
// pass within [least, most].
func (r Reconciled) Requeue(least, most time.Duration) time.Duration {
	r.t.Helper()
	if r.Err != nil {
		r.t.Fatalf("Reconcile failed: %v; want a pass again within %s to %s", r.Err, least, most)
	}
	if d := r.Result.RequeueAfter; d < least || d > most {
		r.t.Fatalf("Reconcile asked for the next pass after %s, want %s to %s", d, least, most)
	}
	return r.Result.RequeueAfter
}

// Failed fails the test unless the call returned an error containing want
// (and so is retried with the workqueue's backoff, which an explicit
// RequeueAfter would override).
func (r Reconciled) Failed(want string) {
	r.t.Helper()
	if r.Err == nil || !strings.Contains(r.Err.Error(), want) {
		r.t.Fatalf("Reconcile returned %v (%+v), want an error containing %q", r.Err, r.Result, want)
	}
	if r.Result.RequeueAfter != 0 {
		r.t.Fatalf("Reconcile failed and asked for a pass after %s, which overrides the backoff", r.Result.RequeueAfter)
	}
}

// Done fails the test unless the call succeeded and asked for no pass.
func (r Reconciled) Done() {
	r.t.Helper()
	if r.Err != nil || r.Result != (reconcile.Result{}) {
		r.t.Fatalf("Reconcile returned %+v, %v; want nothing more to do", r.Result, r.Err)
	}
}
