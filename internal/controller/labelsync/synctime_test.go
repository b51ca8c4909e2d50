package labelsync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/testenv"
)

// notConnected is the workload side of a cluster clustercache cannot
// connect to (no kubeconfig Secret, or an API server that does not
// answer): what clustercache answers for it.
type notConnected struct{}

func (notConnected) Client(context.Context, types.NamespacedName) (client.Client, error) {
	return nil, fmt.Errorf("getting client: %w", clustercache.ErrClusterNotConnected)
}

func (notConnected) WatchNodes(context.Context, types.NamespacedName) error { return nil }

// testSyncTimeWhileUnreachable: while a profile's only cluster is
// unreachable, its passes follow the cluster's backoff (1s, 2s, 4s, …), and
// yet status.lastSyncTime is never older than the resync interval when the
// next pass comes, nor rewritten by every pass. The passes are run as the
// controller runs them (each after the RequeueAfter of the one before) on a
// fake clock, against the real management API server.
func testSyncTimeWhileUnreachable(t *testing.T, p *planes) {
	h := newNamespace(t, p)
	h.cluster("far", p.workloadKC, nil)
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	h.machine(b, "far", h.ns+"-n1")
	const resync = 10 * time.Second
	h.profileEvery("p1", resync, "rack.example.com")

	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	r := labelsync.NewReconciler(h.c, events.NewFakeRecorder(1000), notConnected{}, clk)
	key := types.NamespacedName{Namespace: h.ns, Name: "p1"}
	stamps := map[time.Time]bool{}
	for i := range 15 {
		// Each pass asks for the next, no later than the interval.
		next := testenv.Reconcile(h.ctx, t, r, key).Requeue(time.Nanosecond, resync)
		var prof v1alpha1.LabelSyncProfile
		if err := h.c.Get(h.ctx, key, &prof); err != nil {
			t.Fatal(err)
		}
		s := prof.Status
		if len(s.Waiting) != 1 || s.Waiting[0].Reason != v1alpha1.WaitClusterUnreachable || s.LastSyncTime == nil {
			t.Fatalf("pass %d: status %+v, want h1 waiting for its unreachable cluster and a lastSyncTime", i, s)
		}
		now := clk.Now()
		if due := now.Add(next); due.Sub(s.LastSyncTime.Time) > resync {
			t.Fatalf("pass %d at +%s: lastSyncTime +%s, next pass at +%s: it would be %s old by then, more than the %s interval",
				i, now.Sub(start), s.LastSyncTime.Sub(start), due.Sub(start), due.Sub(s.LastSyncTime.Time), resync)
		}
		stamps[s.LastSyncTime.Time] = true
		clk.SetTime(now.Add(next))
	}
	// Refreshed once per interval, not by every pass.
	if elapsed := clk.Now().Sub(start); len(stamps) > int(elapsed/resync)+1 {
		t.Fatalf("lastSyncTime took %d values in %s of %s intervals: rewritten more often than once per interval", len(stamps), elapsed, resync)
	}
}
