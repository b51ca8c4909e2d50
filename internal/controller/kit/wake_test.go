package kit

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestWakeNeverBlocksAndLosesNoRequest: requests made before the
// controller starts wait for its queue, and any number made after go
// straight to it, without a reader on the other side.
func TestWakeNeverBlocksAndLosesNoRequest(t *testing.T) {
	t.Parallel()
	var w Wake
	req := func(i int) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Name: string(rune('a' + i))}}
	}
	w.Add(req(0), req(1))
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if err := w.Source().Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 26; i++ {
		w.Add(req(i))
	}
	w.Add(req(0)) // already waiting: folded into one pass
	if got := q.Len(); got != 26 {
		t.Fatalf("queue holds %d requests, want 26 (2 made before the start, 24 after)", got)
	}
}
