package main

import (
	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// memory samples the controller process now (its 200 ms sampler runs on
// for the peak).
func (b *bench) memory(at string) benchkit.MemorySample {
	s, _ := b.ctrl.Sample(at)
	s.GoSysMiB = 0 // not part of this benchmark's results
	return s
}

// cloudCalls is the controller's cloud requests of one provider by
// operation (tagsync_cloud_requests_total), all status codes.
func cloudCalls(text, provider string) map[string]int {
	out := map[string]int{}
	benchkit.EachSample(text, "tagsync_cloud_requests_total", func(series string, v float64) {
		if benchkit.Label(series, "provider") == provider {
			out[benchkit.Label(series, "operation")] += int(v)
		}
	})
	return out
}
