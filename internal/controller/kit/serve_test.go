package kit

import (
	"context"
	"errors"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

// oneObject routes every change to the object "obj".
type oneObject struct{}

func (oneObject) Route(cloudchange.Change) []string { return []string{"obj"} }
func (oneObject) Overflow()                         {}

// TestServeTellsTheHubAPassKeptItsChanges: a pass that returns no error
// but kept its changes for its retry (KeepForRetry) finishes them failed,
// with cloudchange.ErrKeptForRetry; a pass that finished them, done; one
// that failed, with its error.
func TestServeTellsTheHubAPassKeptItsChanges(t *testing.T) {
	failed := errors.New("the pass failed")
	for name, tc := range map[string]struct {
		pass func(ctx context.Context) error
		want func(error) bool
	}{
		"finished": {func(context.Context) error { return nil }, func(err error) bool { return err == nil }},
		"kept": {func(ctx context.Context) error { KeepForRetry(ctx, "throttled"); return nil },
			func(err error) bool { return errors.Is(err, cloudchange.ErrKeptForRetry) }},
		"failed": {func(ctx context.Context) error { KeepForRetry(ctx, "throttled"); return failed },
			func(err error) bool { return errors.Is(err, failed) && !errors.Is(err, cloudchange.ErrKeptForRetry) }},
	} {
		t.Run(name, func(t *testing.T) {
			hub := cloudchange.NewHub(cloudchange.HubOptions{})
			var s Subscriber
			s.UseEvents(hub)
			s.Subscribe("test", oneObject{})
			done := make(chan error, 1)
			hub.Publish([]cloudchange.Change{{Cloud: "azure", Resource: "r", Kind: cloudchange.KindWrite, ID: name}}, func(err error) { done <- err })
			hub.Drain()
			_, _ = s.Serve(t.Context(), "obj", func(ctx context.Context) (reconcile.Result, error) { return reconcile.Result{}, tc.pass(ctx) })
			select {
			case err := <-done:
				if !tc.want(err) {
					t.Errorf("the delivery is done with %v", err)
				}
			default:
				t.Fatal("the delivery is not done after the pass")
			}
		})
	}
	KeepForRetry(context.Background(), "outside a pass") // does nothing
}
