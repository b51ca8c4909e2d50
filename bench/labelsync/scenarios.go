package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// oneWait bounds the wait for one change or revert.
const oneWait = 30 * time.Second

// Scenarios starts the controller, creates the profile, waits for the
// initial sync and runs the selected scenarios in order: change, revert,
// steady, then the memory verdict over all of them.
func (b *bench) Scenarios(ctx context.Context) error {
	res := b.res
	if err := b.startController(ctx); err != nil {
		return err
	}
	res.Command = b.ctrl.Command
	mem := &MemoryResult{Memory: benchkit.Memory{GoalMiB: 150}, Hosts: b.Hosts(), Clusters: len(b.Workloads)}
	res.Memory = mem
	mem.sample(b, "informers synced, no profile yet")
	var err error
	if res.Initial, err = b.initialSync(ctx); err != nil {
		return fmt.Errorf("initial sync: %w", err)
	}
	mem.sample(b, "initial sync done")
	err = b.o.RunSteps(ctx, []benchkit.Step{
		{Name: "change", After: "after change", Run: func(ctx context.Context) (err error) { res.Change, err = b.changeScenario(ctx); return err }},
		{Name: "revert", After: "after revert", Run: func(ctx context.Context) (err error) { res.Revert, err = b.revertScenario(ctx); return err }},
		{Name: "steady", After: "after steady", Run: func(ctx context.Context) (err error) { res.Steady, err = b.steadyScenario(ctx); return err }},
	}, func(at string) { mem.sample(b, at) })
	if err != nil {
		return err
	}
	mem.Settle(b.ctrl, b.o.Scenarios, func(at string) benchkit.MemorySample { return mem.sample(b, at) })
	if b.o.heapProfile != "" {
		return b.saveHeapProfile(b.o.heapProfile)
	}
	return nil
}

// sample adds a sample of the controller process's memory now.
func (m *MemoryResult) sample(b *bench, at string) benchkit.MemorySample {
	s, _ := b.ctrl.Sample(at)
	anon, file := rssParts(b.ctrl.Pid())
	m.Samples = append(m.Samples, s)
	m.Parts = append(m.Parts, RSSParts{At: at, AnonMiB: anon, FileMiB: file})
	return s
}

// initialSync creates the profile and waits until every Node carries its
// host's in-scope labels and the profile is Ready with every host in sync.
func (b *bench) initialSync(ctx context.Context) (*InitialResult, error) {
	r := &InitialResult{}
	b.resetWrites()
	before := b.snapshot()
	p := benchkit.Profile(b.o.resync)
	start := time.Now()
	if err := b.C.Create(ctx, p); err != nil {
		return r, err
	}
	last, err := b.AwaitAllNodes(ctx, b.o.Timeout)
	if err != nil {
		return r, err
	}
	r.LabelsSeconds = benchkit.Secs(last.Sub(start))
	if err := b.WaitReady(ctx, b.ctrl.Running, b.ctrl.LogFile, b.o.Timeout); err != nil {
		return r, err
	}
	r.StatusSeconds = benchkit.Secs(time.Since(start))
	r.Traffic = b.snapshot().since(before)
	benchkit.Logf("initial sync: %d Nodes labelled %.2fs after the profile was created (status %.2fs); %s",
		b.Hosts(), r.LabelsSeconds, r.StatusSeconds, r.Traffic.summary())
	return r, nil
}

// latency makes n edits one after the other, each with edit(i), which
// returns the edit's operation and how long the Node took to show it, and
// judges the latencies; what is logged starts with what (given n).
func (b *bench) latency(ctx context.Context, what string, n int, edit func(i int) (string, time.Duration, error)) (*LatencyResult, error) {
	r := &LatencyResult{GoalSeconds: 1}
	before := b.snapshot()
	for i := range n {
		op, took, err := edit(i)
		if err != nil {
			return r, err
		}
		r.add(op, took)
	}
	r.finish(b.settleWrites(ctx, before))
	benchkit.Logf(what+": median %.3fs, p99 %.3fs, max %.3fs; writes %s", len(r.Seconds), r.Median, r.P99, r.Max, benchkit.OpsLine(r.Writes))
	return r, nil
}

// changeScenario (A) edits host labels one after the other and measures,
// for each, from just before the request until the harness's watch of the
// workload cluster sees the Node carry the host's in-scope labels
// (benchkit.Metal.ChangeHost).
func (b *bench) changeScenario(ctx context.Context) (*LatencyResult, error) {
	return b.latency(ctx, "A: %d host label changes", b.o.changes, func(i int) (string, time.Duration, error) {
		return b.ChangeHost(ctx, i, oneWait)
	})
}

// revertScenario (B) edits in-scope labels on Nodes one after the other
// (a changed value, an added key, a removed key in turn) and measures,
// for each, from just before the request until the harness's watch sees a
// newer version of the Node with the host's labels back
// (benchkit.Metal.EditNode).
func (b *bench) revertScenario(ctx context.Context) (*LatencyResult, error) {
	return b.latency(ctx, "B: %d Node edits reverted", b.o.reverts, func(i int) (string, time.Duration, error) {
		return b.EditNode(ctx, i, oneWait)
	})
}

// steadyScenario (C) waits, with nothing changing, for o.steadyResyncs
// periodic passes of the profile and counts every write in the management
// and workload clusters meanwhile, and the controller's own requests.
func (b *bench) steadyScenario(ctx context.Context) (*SteadyResult, error) {
	r := &SteadyResult{Resyncs: b.o.steadyResyncs, ResyncInterval: b.o.resync.String()}
	if err := b.quiet(ctx); err != nil {
		return r, err
	}
	before := b.snapshot()
	start := time.Now()
	var passes float64
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Duration(b.o.steadyResyncs+1)*b.o.resync+b.o.Timeout, true,
		func(context.Context) (bool, error) {
			if err := b.ctrl.Running(); err != nil {
				return false, err
			}
			text, err := b.ctrl.Metrics()
			if err != nil {
				return false, nil
			}
			passes = benchkit.MetricValue(text, "tagsync_labelsync_passes_total", `kind="LabelSyncProfile"`) - before.passes
			return passes >= float64(b.o.steadyResyncs), nil
		})
	if err != nil {
		return r, fmt.Errorf("%d periodic passes after %s: %w", int(passes), time.Since(start).Round(time.Second), err)
	}
	// The last pass's status patch, if any, comes after its pass is
	// counted: count what arrives within the next 2 s too.
	time.Sleep(2 * time.Second)
	after := b.snapshot()
	r.WindowSeconds = benchkit.Secs(time.Since(start))
	r.Passes = int(after.passes - before.passes)
	r.PassSeconds = benchkit.Round3((after.passSeconds - before.passSeconds) / max(1, after.passes-before.passes))
	r.Traffic = after.since(before)
	r.judge()
	benchkit.Logf("C: %d periodic passes (%.3fs each) in %.1fs: %s", r.Passes, r.PassSeconds, r.WindowSeconds, r.Traffic.summary())
	return r, nil
}

// quiet waits until no write has been seen for 2 s (the follow-up passes
// of the last scenario are done), polling with a deadline.
func (b *bench) quiet(ctx context.Context) error {
	last, lastChange := total(b.writesSeen()), time.Now()
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, b.o.Timeout, true, func(context.Context) (bool, error) {
		if n := total(b.writesSeen()); n != last {
			last, lastChange = n, time.Now()
		}
		return time.Since(lastChange) >= 2*time.Second, nil
	})
}
