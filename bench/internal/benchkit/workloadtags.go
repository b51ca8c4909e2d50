package benchkit

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// progressEvery is how often WaitPolicyInSync reports progress.
const progressEvery = 10 * time.Second

// WaitPolicyInSync waits until the WorkloadTagPolicy name reports want
// resources in sync for its generation. running (nil: none) reports the
// controller's exit; progress (nil: none) is called every 10 s with the
// policy as last read.
func WaitPolicyInSync(ctx context.Context, c client.Client, name string, want int, running func() error,
	progress func(*v1alpha1.WorkloadTagPolicy), timeout time.Duration) error {
	var p v1alpha1.WorkloadTagPolicy
	reported := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if running != nil {
			if err := running(); err != nil {
				return false, err
			}
		}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			return false, err
		}
		if progress != nil && time.Since(reported) > progressEvery {
			reported = time.Now()
			progress(&p)
		}
		return int(p.Status.InSync) == want && p.Status.ObservedGeneration == p.Generation, nil
	})
	if err != nil {
		return fmt.Errorf("WorkloadTagPolicy %s: %w (last: %d of %d in sync, %d resources)", name, err, p.Status.InSync, want, p.Status.Resources)
	}
	return nil
}
