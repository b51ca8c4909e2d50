package aws

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// TestBudgetPerRegionBoundsConcurrentCalls: concurrent writes and reads
// over two regions send, per region and kind, no more requests than the
// client-side budget holds tokens. The budget refills too slowly to earn a
// token during the test, and each call's deadline is before the next
// token, so the calls beyond the burst fail at once without a request:
// moto must see exactly the burst of each kind in each region.
func TestBudgetPerRegionBoundsConcurrentCalls(t *testing.T) {
	t.Parallel()
	const writeBurst, readBurst = 3, 4
	e := newEnv(t, WithRateLimit(RateLimit{ReadsPerSecond: 1e-6, ReadBurst: readBurst, WritesPerSecond: 1e-6, WriteBurst: writeBurst}),
		func(o *Options) { o.maxIDsPerCall = 2 })
	regions := []string{"us-east-1", "eu-west-1"}
	ids := map[string][]string{}
	for _, r := range regions {
		ids[r] = e.instances(r, 12, map[string]string{"pool": "budget"})
	}
	var mu sync.Mutex
	seen := map[string]int{} // region/bucket -> requests moto got
	e.tr.setInject(func(_ *http.Request, op, region string) *http.Response {
		mu.Lock()
		defer mu.Unlock()
		seen[region+"/"+string(bucketOf(op))]++
		return nil
	})

	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var failed sync.Map
	for _, r := range regions {
		wg.Add(1)
		go func() { // 6 CreateTags calls of 2 IDs in each region
			defer wg.Done()
			for _, res := range e.p.WriteTags(ctx, []cloud.TagWrite{{IDs: ids[r], Patch: tags.Patch{Set: tags.Set{"team": "a"}}}}, nil) {
				if res.Err != nil {
					failed.Store(res.ID, res.Err)
				}
			}
		}()
		for range 3 {
			wg.Add(1)
			go func() { // 3 discoveries of 2 GetResources calls each per region
				defer wg.Done()
				_, _ = e.p.Discover(ctx, []cloud.Classifier{{Name: "pool", Value: "budget"}, {Name: "team", Value: "a"}},
					cloud.DiscoverOptions{Scopes: []string{r}})
			}()
		}
	}
	wg.Wait()
	for _, r := range regions {
		if got := seen[r+"/writes"]; got != writeBurst {
			t.Errorf("%s: moto got %d writes, want the budget's %d", r, got, writeBurst)
		}
		if got := seen[r+"/reads"]; got != readBurst {
			t.Errorf("%s: moto got %d reads, want the budget's %d", r, got, readBurst)
		}
	}
	n := 0
	failed.Range(func(_, _ any) bool { n++; return true })
	if want := 2 * (12 - 2*writeBurst); n != want {
		t.Errorf("%d resources failed, want the %d the budget held back", n, want)
	}
}
