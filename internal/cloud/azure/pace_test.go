package azure

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// TestNetworkLimitIsPaced: Network's write budget of the subscription (here
// 10, refilled 5 a second) is smaller than a batch of 30 network resources:
// the pace follows it and Network's reports, so every resource is written
// and none is refused with 429. Without the pace (the client-side budget
// off) the same batch runs into Network's 429s.
func TestNetworkLimitIsPaced(t *testing.T) {
	limits := map[string][2]providerLimit{"microsoft.network": {{capacity: 100, refill: 50}, {capacity: 10, refill: 5}}}
	for _, paced := range []bool{true, false} {
		t.Run(fmt.Sprintf("paced=%t", paced), func(t *testing.T) {
			env := startArmsim(t, armsimtest.WithThrottle(armsim.ThrottleOptions{NetworkWrites: armsim.Bucket{Capacity: 10, RefillPerSecond: 5}}))
			ids := make([]string, 30)
			for i := range ids {
				ids[i] = env.resource("rg", armsim.Resource{Type: armsim.TypeNetworkInterface, Name: fmt.Sprintf("nic-%d", i)})
			}
			opts := []Option{WithThrottleGates(NewThrottleGates()), func(o *Options) { o.providerLimits = limits }}
			if !paced {
				opts = append(opts, WithRateLimit(RateLimit{Disabled: true}))
			}
			p := env.provider(opts...)
			res := p.WriteTags(t.Context(), []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"team": "a"}}}}, nil)
			refused := env.Server.Calls().CountStatus("Tags.UpdateAtScope", http.StatusTooManyRequests)
			failed := 0
			for _, r := range res {
				if r.Err != nil {
					failed++
				}
			}
			switch {
			case paced && (refused != 0 || failed != 0):
				t.Errorf("paced: %d answers 429, %d resources failed; want none", refused, failed)
			case !paced && refused == 0:
				t.Error("unpaced: no 429: the test shows nothing")
			}
		})
	}
}
