package kit

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Wake enqueues objects from outside the controller's watches (the event
// hub's routes, a pass that ends a contest and wakes the rivals) without
// ever blocking the caller, a worker included: its Source hands it the
// controller's workqueue when the controller starts, and requests made
// before that wait and are added then. It is the one way a controller
// wakes its objects from outside its watches. Its zero value is ready.
type Wake struct {
	mu      sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	pending []reconcile.Request
}

// Source is the raw source to register with WatchesRawSource.
func (w *Wake) Source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.queue = q
		for _, r := range w.pending {
			q.Add(r)
		}
		w.pending = nil
		return nil
	})
}

// Add enqueues a pass of each request; the workqueue folds a request
// already waiting into one pass.
func (w *Wake) Add(reqs ...reconcile.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.queue == nil {
		w.pending = append(w.pending, reqs...)
		return
	}
	for _, r := range reqs {
		w.queue.Add(r)
	}
}
