package kit

import (
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/internal/notify"
)

// UseManager gives a reconciler what it was not built with: the manager's
// client when *c is nil, and when *recorder is nil an event recorder of its
// own, reporting as tagsync-<name>, that tells of the events the API
// server refuses.
func UseManager(mgr manager.Manager, name string, c *client.Client, recorder *events.EventRecorder) error {
	if *c == nil {
		*c = mgr.GetClient()
	}
	if *recorder == nil {
		rec, err := notify.AddRecorder(mgr, "tagsync-"+name)
		if err != nil {
			return err
		}
		*recorder = rec
	}
	return nil
}

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

// RateLimiter is the per-object exponential backoff of every controller.
func RateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](FirstRetry, MaxRetry)
}

// Options are the controller options every controller uses: at most
// concurrent passes at once, retried with RateLimiter.
func Options(concurrent int) controller.Options {
	return controller.Options{MaxConcurrentReconciles: concurrent, RateLimiter: RateLimiter()}
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

// SyncRequestAnnotation on an object a controller serves asks for a pass
// now: set it to any new value (for example a timestamp). The object's
// status.lastSyncRequest says when a pass has served it.
const SyncRequestAnnotation = "tagsync.io/sync-requested"
