package main

import (
	"strconv"
	"strings"

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
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "tagsync_cloud_requests_total{") || !strings.Contains(line, `provider="`+provider+`"`) {
			continue
		}
		_, rest, _ := strings.Cut(line, `operation="`)
		op, _, _ := strings.Cut(rest, `"`)
		sp := strings.LastIndexByte(line, ' ')
		v, _ := strconv.ParseFloat(line[sp+1:], 64)
		out[op] += int(v)
	}
	return out
}
