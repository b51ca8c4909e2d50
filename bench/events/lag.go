package main

import (
	"context"
	"fmt"
	"time"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/armsim"
)

// lagDisks is how many disks the lag scenario classifies, one every
// lagSpacing.
const (
	lagDisks   = 5
	lagSpacing = 2 * time.Second
)

// LagResult is goal 5: disks that newly carry the classifier, each tagged
// env=prod through its change while Resource Graph shows the change only
// IndexDelaySeconds after it, so the full pass the change brings does not
// find the disk in its search.
type LagResult struct {
	IndexDelaySeconds float64         `json:"indexDelaySeconds"`
	Tagged            benchkit.Spread `json:"tagged"`
}

// lag runs the lag scenario: untagged disks created (Resource Graph shows
// new resources at once), the index delay set to -index-delay, then each
// disk given the classifier and timed until it carries env=prod.
func (b *bench) lag(ctx context.Context) (*LagResult, error) {
	sub, rg := b.az.Estate.Subscriptions[0], "rg-"+benchkit.AzureInfra
	var ids []string
	for i := range lagDisks {
		id, err := b.az.Arm.CreateResource(sub, rg, armsim.Resource{Type: armsim.TypeDisk, Name: fmt.Sprintf("%s-lag-%d", benchkit.AzureInfra, i)})
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	before := b.az.Arm.GraphIndexDelay()
	b.az.Arm.SetGraphIndexDelay(b.o.indexDelay)
	defer b.az.Arm.SetGraphIndexDelay(before)
	r := &LagResult{IndexDelaySeconds: b.o.indexDelay.Seconds()}
	for i, id := range ids {
		if i > 0 && !benchkit.Pause(ctx, lagSpacing) {
			return nil, ctx.Err()
		}
		start := time.Now()
		if err := b.az.Arm.SetTags(id, map[string]string{classifier: "owned"}); err != nil {
			return nil, err
		}
		at, err := b.az.Reverted(ctx, id, b.ctrl.Running, b.o.Timeout)
		if err != nil {
			return nil, fmt.Errorf("newly classified disk %s: %w", id, err)
		}
		r.Tagged.Seconds = append(r.Tagged.Seconds, benchkit.Secs(at.Sub(start)))
	}
	r.Tagged.P50, r.Tagged.P99 = benchkit.Percentile(r.Tagged.Seconds, 50), benchkit.Percentile(r.Tagged.Seconds, 99)
	benchkit.Logf("lag: %d newly classified disks tagged %s with a %s index delay", lagDisks, r.Tagged, b.o.indexDelay)
	return r, nil
}
