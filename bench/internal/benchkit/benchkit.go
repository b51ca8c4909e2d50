// Package benchkit is the runner the benchmarks under bench/ share: the
// command (Main, Run: start, scenarios, verdicts, report, results file),
// the common flags and the scenario loop, the results' header (commit,
// machine, verdict table) and the memory goal, the control plane, armsim
// and the harness's metadata watches they run against, and `tagsync run`
// as a child process whose memory they read from /proc.
//
// Each benchmark keeps its estate, its scenarios, its results' fields and
// its report in its own package.
package benchkit

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// run calls fn until it returns or the process is interrupted (SIGINT,
// SIGTERM cancel the context); an error is printed on stderr and exits
// with status 1.
func run(fn func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := fn(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stop()
		os.Exit(1)
	}
}

// Logf prints a progress line, stamped with the time of day, on stderr.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// Has reports whether the comma-separated list (a -scenarios flag) names s.
func Has(list, s string) bool {
	for _, x := range strings.Split(list, ",") {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}

// Secs is a duration in seconds, rounded to the millisecond.
func Secs(d time.Duration) float64 { return Round3(d.Seconds()) }

// Round3 rounds to three decimals.
func Round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// MiB is a byte count in MiB, rounded to one decimal.
func MiB(b int64) float64 { return math.Round(float64(b)/(1<<20)*10) / 10 }

// DiffCalls is after - before for counts by operation; operations whose
// count did not change are left out.
func DiffCalls(before, after map[string]int) map[string]int {
	out := maps.Clone(after)
	for k, v := range before {
		out[k] -= v
		if out[k] == 0 {
			delete(out, k)
		}
	}
	return out
}

// OpsLine renders counts by operation, sorted by operation: "A=1 B=2".
func OpsLine(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// Parallel calls fn(ctx, i) for i in [0, n) on at most workers goroutines
// and returns the first error; after one, ctx is cancelled.
func Parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, workers))
	for i := range n {
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}
