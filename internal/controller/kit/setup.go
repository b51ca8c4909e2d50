package kit

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The retry policy of every controller's workqueue: a failed pass of one
// object is retried after FirstRetry, doubling up to MaxRetry (the tenth
// retry in a row waits about a minute); a success resets it.
// controller-runtime's default doubles from 5 ms to 1000 s, so a failing
// object spends its first dozen retries (and their cloud calls) within a
// second. Errors a retry cannot cure do not come here: see NeedsPerson.
const (
	FirstRetry = 100 * time.Millisecond
	MaxRetry   = 5 * time.Minute
)

// rateLimiter is the per-object exponential backoff of every controller.
func rateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](FirstRetry, MaxRetry)
}

// Options are the controller options every controller uses: at most
// concurrent passes at once, retried with rateLimiter.
func Options(concurrent int) controller.Options {
	return controller.Options{MaxConcurrentReconciles: concurrent, RateLimiter: rateLimiter()}
}

// UpdateChanged lets through every create, delete and generic event, and an
// update of two T whose difference changed reports: what a controller reads
// of T changed. An update of another type is let through.
func UpdateChanged[T client.Object](changed func(old, new T) bool) predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		a, ok1 := e.ObjectOld.(T)
		b, ok2 := e.ObjectNew.(T)
		if !ok1 || !ok2 {
			return true
		}
		return changed(a, b)
	}}
}
