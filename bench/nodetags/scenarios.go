package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// passRecorder samples a controller's pass counters in the background, so
// that individual pass durations can be told apart.
type passRecorder struct {
	stopCh chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	first  passStats
	last   passStats
	passes []PassSample
	start  time.Time
}

func recordPasses(c controller) *passRecorder {
	r := &passRecorder{stopCh: make(chan struct{}), done: make(chan struct{}), start: time.Now()}
	r.last, _ = readPasses(c)
	r.first = r.last
	go func() {
		defer close(r.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.stopCh:
				r.sample(c)
				return
			case <-t.C:
				r.sample(c)
			}
		}
	}()
	return r
}

func (r *passRecorder) sample(c controller) {
	p, err := readPasses(c)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := p.count - r.last.count; n > 0 {
		r.passes = append(r.passes, PassSample{
			EndedAfter: benchkit.Secs(time.Since(r.start)), Passes: int(n), Seconds: benchkit.Round3(p.sum - r.last.sum), Fresh: int(p.fresh - r.last.fresh),
		})
	}
	r.last = p
}

func (r *passRecorder) count() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.passes {
		n += p.Passes
	}
	return n, nil
}

// stop ends the sampling; it returns the passes and the seconds the
// controller's Node PATCHes waited for the client-side rate limiter.
func (r *passRecorder) stop() ([]PassSample, float64) {
	close(r.stopCh)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.passes, benchkit.Round3(r.last.throttled - r.first.throttled)
}

// coldAndResync runs goal 1 (cold sync of 1000 scale-set nodes and 50 VMs)
// and, on the converged cluster, goal 2 (unchanged-cluster resyncs).
func (b *bench) coldAndResync(ctx context.Context, withResync bool) (*ColdResult, *ResyncResult, error) {
	dir, err := b.scenarioDir("cold")
	if err != nil {
		return nil, nil, err
	}
	cloud, err := startCloud(dir)
	if err != nil {
		return nil, nil, err
	}
	defer cloud.close()
	var l layout
	for i := range b.o.coldScaleSets {
		name := fmt.Sprintf("pool%02d", i)
		l.pools = append(l.pools, pool{rg: "mc_bench_aks_westeurope", name: name, size: b.o.coldPerSet, tags: poolTags(i, name)})
	}
	for i := range b.o.coldVMs {
		l.vms = append(l.vms, vm{rg: "rg-legacy-vms", name: fmt.Sprintf("vm-legacy-%03d", i), tags: vmTags(i)})
	}
	bl, err := cloud.build(l)
	if err != nil {
		return nil, nil, err
	}
	if err := b.reset(ctx); err != nil {
		return nil, nil, err
	}
	if err := b.createNodes(ctx, bl.nodes); err != nil {
		return nil, nil, err
	}
	ctl, err := b.startInProcess(ctx, cloud)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err := ctl.Stop(); err != nil {
			benchkit.Logf("stopping the controller: %v", err)
		}
	}()

	cold := &ColdResult{
		Nodes: len(bl.nodes), ScaleSets: len(l.pools), NodesPerScaleSet: b.o.coldPerSet, VMs: len(l.vms),
		ResourceGroups: len(bl.groups), NodeObjectBytes: b.nodeSize(bl.nodes[0]), GoalSeconds: 30,
	}
	cold.Phase, err = b.initialSync(ctx, "cold sync", cloud, ctl, ctl.provider.Calls, bl.expected())
	if err != nil {
		return cold, nil, err
	}
	cold.Met = cold.Phase.LabelsSeconds <= cold.GoalSeconds
	benchkit.Logf("cold sync: %d nodes labelled in %.2fs; ARM %d reads, %d writes, %d 429s; %d node writes; %d passes",
		cold.Nodes, cold.Phase.LabelsSeconds, cold.Phase.Calls.Reads, cold.Phase.Calls.Writes, cold.Phase.Calls.Throttled,
		cold.Phase.NodeWrites, len(cold.Phase.PassLog))
	if !withResync {
		return cold, nil, nil
	}

	rs := &ResyncResult{
		Nodes: len(bl.nodes), ScaleSets: len(l.pools), ResourceGroups: len(bl.groups),
		ReadBudget: len(l.pools) + len(bl.groups), PassesPerHour: 12,
		NaiveReadsPerPass: len(bl.nodes), NaiveReadsPerHour: 12 * len(bl.nodes),
	}
	for i := range b.o.resyncs {
		r, err := b.resyncOnce(ctx, cloud, ctl, ctl.provider.Calls)
		if err != nil {
			return cold, rs, fmt.Errorf("resync %d: %w", i+1, err)
		}
		rs.Runs = append(rs.Runs, r)
		benchkit.Logf("resync %d: pass %.3fs; ARM %d reads (%s), %d writes; %d node writes (%d changed resourceVersions)",
			i+1, r.PassSeconds, r.Calls.Reads, benchkit.OpsLine(r.Calls.ByOp), r.Calls.Writes, r.NodeWrites, r.NodesChanged)
	}
	rs.summarize()
	return cold, rs, nil
}

// initialSync creates the NodeTagSync and measures until every node
// carries its labels, then until the controller is quiet.
func (b *bench) initialSync(ctx context.Context, what string, cloud *simCloud, ctl controller, provCalls func() map[string]int, expect map[string]map[string]string) (Phase, error) {
	var ph Phase
	b.nodes.expectLabels(expect)
	b.nodes.resetWrites()
	cloud.srv.ResetCalls()
	provBefore := provCalls()
	rec := recordPasses(ctl)
	t0 := time.Now()
	if err := b.createSync(ctx); err != nil {
		rec.stop()
		return ph, err
	}
	at, err := b.nodes.waitExpected(ctx, what, b.o.timeout)
	if err != nil {
		rec.stop()
		return ph, err
	}
	ph.LabelsSeconds = benchkit.Secs(at.Sub(t0))
	seen, _, err := b.waitFullSyncAfter(ctx, time.Time{})
	if err != nil {
		rec.stop()
		return ph, err
	}
	ph.StatusSeconds = benchkit.Secs(seen.Sub(t0))
	if err := b.waitQuiet(ctx, 3*time.Second, rec.count); err != nil {
		rec.stop()
		return ph, err
	}
	ph.PassLog, ph.KubeRateLimitWaitSeconds = rec.stop()
	ph.Calls = armStats(cloud.srv.Calls(), benchkit.DiffCalls(provBefore, provCalls()))
	ph.NodeWrites = b.nodes.writesSeen()
	if nts, err := b.getSync(ctx); err == nil {
		ph.Synced, ph.Errors, ph.Conflicts = int(nts.Status.SyncedNodes), int(nts.Status.ErrorCount), int(nts.Status.ConflictCount)
	}
	return ph, nil
}

// resyncOnce asks for a pass with fresh cloud reads on an unchanged cluster
// and counts what it cost.
func (b *bench) resyncOnce(ctx context.Context, cloud *simCloud, ctl controller, provCalls func() map[string]int) (ResyncRun, error) {
	var r ResyncRun
	prev, err := b.lastFullSync(ctx)
	if err != nil {
		return r, err
	}
	nextSecond(prev)
	before, err := b.listVersions(ctx)
	if err != nil {
		return r, err
	}
	cloud.srv.ResetCalls()
	provBefore := provCalls()
	b.nodes.resetWrites()
	p0, err := readPasses(ctl)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	if err := b.requestSync(ctx); err != nil {
		return r, err
	}
	seen, _, err := b.waitFullSyncAfter(ctx, prev)
	if err != nil {
		return r, err
	}
	r.WallSeconds = benchkit.Secs(seen.Sub(t0))
	// Let any follow-up pass (e.g. triggered by a Node write) happen and be
	// counted.
	if err := b.waitQuiet(ctx, 3*time.Second, func() (int, error) { p, err := readPasses(ctl); return int(p.count), err }); err != nil {
		return r, err
	}
	p1, err := readPasses(ctl)
	if err != nil {
		return r, err
	}
	after, err := b.listVersions(ctx)
	if err != nil {
		return r, err
	}
	r.Passes = int(p1.count - p0.count)
	r.PassSeconds = benchkit.Round3(p1.sum - p0.sum)
	r.Calls = armStats(cloud.srv.Calls(), benchkit.DiffCalls(provBefore, provCalls()))
	r.NodeWrites = b.nodes.writesSeen()
	r.NodesChanged = changedVersions(before, after)
	return r, nil
}

// fanOut runs goal 3: a portal edit on one 500-node scale set, then a sync
// request; time until all 500 nodes show the new values.
func (b *bench) fanOut(ctx context.Context) (*FanOutResult, error) {
	dir, err := b.scenarioDir("fanout")
	if err != nil {
		return nil, err
	}
	cloud, err := startCloud(dir)
	if err != nil {
		return nil, err
	}
	defer cloud.close()
	l := layout{pools: []pool{{rg: "mc_fanout_aks_westeurope", name: "bigpool", size: b.o.fanOutNodes, tags: poolTags(0, "bigpool")}}}
	bl, err := cloud.build(l)
	if err != nil {
		return nil, err
	}
	if err := b.reset(ctx); err != nil {
		return nil, err
	}
	if err := b.createNodes(ctx, bl.nodes); err != nil {
		return nil, err
	}
	ctl, err := b.startInProcess(ctx, cloud)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := ctl.Stop(); err != nil {
			benchkit.Logf("stopping the controller: %v", err)
		}
	}()
	res := &FanOutResult{Nodes: len(bl.nodes), GoalSeconds: 10}
	if res.Initial, err = b.initialSync(ctx, "fan-out initial sync", cloud, ctl, ctl.provider.Calls, bl.expected()); err != nil {
		return res, err
	}

	edit := map[string]string{"env": "canary", "release": "r42"}
	res.Edit = edit
	expect := map[string]map[string]string{}
	for _, n := range bl.nodes {
		expect[n.name] = labelsFor(edit)
	}
	prev, err := b.lastFullSync(ctx)
	if err != nil {
		return res, err
	}
	nextSecond(prev)
	b.nodes.expectLabels(expect)
	b.nodes.resetWrites()
	if err := cloud.srv.SetTags(bl.scaleSets["bigpool"], edit); err != nil {
		return res, err
	}
	cloud.srv.ResetCalls()
	provBefore := ctl.provider.Calls()
	rec := recordPasses(ctl)
	t0 := time.Now()
	if err := b.requestSync(ctx); err != nil {
		rec.stop()
		return res, err
	}
	at, err := b.nodes.waitExpected(ctx, "fan-out", b.o.timeout)
	if err != nil {
		rec.stop()
		return res, err
	}
	res.Phase.LabelsSeconds = benchkit.Secs(at.Sub(t0))
	seen, _, err := b.waitFullSyncAfter(ctx, prev)
	if err != nil {
		rec.stop()
		return res, err
	}
	res.Phase.StatusSeconds = benchkit.Secs(seen.Sub(t0))
	if err := b.waitQuiet(ctx, 3*time.Second, rec.count); err != nil {
		rec.stop()
		return res, err
	}
	res.Phase.PassLog, res.Phase.KubeRateLimitWaitSeconds = rec.stop()
	res.Phase.Calls = armStats(cloud.srv.Calls(), benchkit.DiffCalls(provBefore, ctl.provider.Calls()))
	res.Phase.NodeWrites = b.nodes.writesSeen()
	if nts, err := b.getSync(ctx); err == nil {
		res.Phase.Synced, res.Phase.Errors, res.Phase.Conflicts = int(nts.Status.SyncedNodes), int(nts.Status.ErrorCount), int(nts.Status.ConflictCount)
	}
	res.Met = res.Phase.LabelsSeconds <= res.GoalSeconds
	benchkit.Logf("fan-out: %d nodes show the edit %.2fs after the sync request; ARM %d reads, %d writes; %d node writes",
		res.Nodes, res.Phase.LabelsSeconds, res.Phase.Calls.Reads, res.Phase.Calls.Writes, res.Phase.NodeWrites)
	return res, nil
}

// memory runs goal 4: the RSS of `tagsync run` (a separate process) over
// 5000 nodes; if that process cannot run, the in-process numbers with a
// caveat. Then the -memory-experiments, each on a fresh cluster.
func (b *bench) memory(ctx context.Context) (*MemoryResult, error) {
	res, err := b.memoryRun(ctx, variantTagsyncRun)
	if err != nil || res.SeparateProcessError != "" {
		return res, err
	}
	for _, v := range strings.Split(b.o.memExperiments, ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		x, err := b.memoryRun(ctx, v)
		if x != nil {
			res.Experiments = append(res.Experiments, x)
		}
		if err != nil {
			return res, fmt.Errorf("memory experiment %s: %w", v, err)
		}
	}
	return res, nil
}

// Memory scenario variants: how `tagsync run` is started.
const (
	// variantTagsyncRun is `tagsync run` with its defaults: the goal
	// measurement. Its --memory-limit is "auto" (90% of the cgroup's
	// limit); the harness runs in no memory cgroup, so no limit is set,
	// as with the Helm chart's 256Mi limit (auto: 230 MiB) until the heap
	// nears 230 MiB.
	variantTagsyncRun = "tagsync-run"
	// variantMemoryLimit is `tagsync run --memory-limit 100Mi`.
	variantMemoryLimit = "memory-limit"
)

// experimentLimit is the soft memory limit of variantMemoryLimit.
const experimentLimit = "100Mi"

// memoryRun builds the 5000-node layout on a fresh armsim, starts the
// controller process of the variant and measures its memory.
func (b *bench) memoryRun(ctx context.Context, variant string) (*MemoryResult, error) {
	dir, err := b.scenarioDir("memory-" + variant)
	if err != nil {
		return nil, err
	}
	cloud, err := startCloud(dir)
	if err != nil {
		return nil, err
	}
	defer cloud.close()
	var l layout
	for i := range b.o.memSets {
		name := fmt.Sprintf("mpool%02d", i)
		rg := fmt.Sprintf("mc_mem_aks_%d", i%max(b.o.memGroups, 1))
		l.pools = append(l.pools, pool{rg: rg, name: name, size: b.o.memPerSet, tags: poolTags(i, name)})
	}
	bl, err := cloud.build(l)
	if err != nil {
		return nil, err
	}
	if err := b.reset(ctx); err != nil {
		return nil, err
	}
	if err := b.createNodes(ctx, bl.nodes); err != nil {
		return nil, err
	}
	res := &MemoryResult{Variant: variant, Nodes: len(bl.nodes), ScaleSets: len(l.pools), ResourceGroups: len(bl.groups),
		NodeObjectBytes: b.nodeSize(bl.nodes[0]), NodeShape: b.o.nodeShape(), GoalMiB: 150}

	if b.o.memoryMode == "in-process" && variant == variantTagsyncRun {
		res.Mode = "in-process (requested): RSS includes armsim and the harness"
		return res, b.memoryInProcess(ctx, cloud, bl, res)
	}
	var sep *benchkit.Process
	var bin string
	bin, err = benchkit.BuildTagsync(ctx, b.o.tagsyncBin, b.env.RootDir, b.dir)
	if err == nil {
		var extra []string
		switch variant {
		case variantTagsyncRun:
			res.Mode = "separate process: tagsync run"
		case variantMemoryLimit:
			res.Mode = "separate process: tagsync run --memory-limit " + experimentLimit
			extra = []string{"--memory-limit", experimentLimit}
		default:
			return nil, fmt.Errorf("unknown memory variant %q (want %s or %s)", variant, variantTagsyncRun, variantMemoryLimit)
		}
		sep, err = b.startSeparate(ctx, bin, dir, cloud, extra)
	}
	if err != nil {
		if variant != variantTagsyncRun {
			return res, err
		}
		res.SeparateProcessError = err.Error()
		benchkit.Logf("memory: `tagsync run` as a separate process failed, falling back to in-process numbers: %v", err)
		return res, b.memoryInProcess(ctx, cloud, bl, res)
	}
	defer func() {
		if err := sep.Stop(); err != nil {
			benchkit.Logf("stopping the controller process: %v", err)
		}
	}()
	res.Command = sep.Command
	sample := func(what string) error {
		if err := sep.Running(); err != nil {
			return err
		}
		s, err := sep.Sample(what)
		if err != nil {
			return err
		}
		res.Samples = append(res.Samples, s)
		benchkit.Logf("memory %s (%s): VmRSS %.1f MiB, VmHWM %.1f MiB, Go heap in use %.1f MiB, CPU %.1fs", variant, what, s.RSSMiB, s.HWMMiB, s.GoHeapInuseMiB, s.CPUSeconds)
		return nil
	}
	if err := sample("started, informers synced over all nodes, no NodeTagSync"); err != nil {
		return res, err
	}
	res.Sync, err = b.initialSync(ctx, "memory cold sync ("+variant+")", cloud, sep, func() map[string]int { return nil }, bl.expected())
	if err != nil {
		return res, err
	}
	benchkit.Logf("memory %s: %d nodes labelled in %.2fs", variant, res.Nodes, res.Sync.LabelsSeconds)
	if err := sample("converged (all labels written)"); err != nil {
		return res, err
	}
	r, err := b.resyncOnce(ctx, cloud, sep, func() map[string]int { return nil })
	if err != nil {
		return res, err
	}
	res.Resync = &r
	time.Sleep(10 * time.Second)
	if err := sample("after a fresh resync and 10s idle"); err != nil {
		return res, err
	}
	last := res.Samples[len(res.Samples)-1]
	res.RSSMiB, res.PeakRSSMiB = last.RSSMiB, last.HWMMiB
	res.Met = res.PeakRSSMiB <= res.GoalMiB
	return res, nil
}

// memoryInProcess runs the controller in this process (the fallback, or
// -memory-mode in-process for a heap profile): the RSS then includes armsim,
// the harness and its watch, so it over-states the controller; the Go heap
// numbers are given too.
func (b *bench) memoryInProcess(ctx context.Context, cloud *simCloud, bl built, res *MemoryResult) error {
	if res.Mode == "" {
		res.Mode = "in-process (fallback): RSS includes armsim and the harness"
	}
	ctl, err := b.startInProcess(ctx, cloud)
	if err != nil {
		return err
	}
	defer func() { _ = ctl.Stop() }()
	sample := func(what string) {
		rss, hwm, _ := benchkit.ProcMemory(os.Getpid())
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s := benchkit.MemorySample{At: what, RSSMiB: benchkit.MiB(rss), HWMMiB: benchkit.MiB(hwm), GoHeapInuseMiB: benchkit.MiB(int64(ms.HeapInuse)), GoSysMiB: benchkit.MiB(int64(ms.Sys)),
			Goroutines: runtime.NumGoroutine(), CPUSeconds: benchkit.ProcCPU(os.Getpid())}
		res.Samples = append(res.Samples, s)
		benchkit.Logf("memory (%s): VmRSS %.1f MiB, VmHWM %.1f MiB, Go heap in use %.1f MiB", what, s.RSSMiB, s.HWMMiB, s.GoHeapInuseMiB)
	}
	sample("started, informers synced over all nodes, no NodeTagSync")
	if res.Sync, err = b.initialSync(ctx, "memory cold sync (in-process)", cloud, ctl, ctl.provider.Calls, bl.expected()); err != nil {
		return err
	}
	sample("converged (all labels written)")
	r, err := b.resyncOnce(ctx, cloud, ctl, ctl.provider.Calls)
	if err != nil {
		return err
	}
	res.Resync = &r
	time.Sleep(10 * time.Second)
	sample("after a fresh resync and 10s idle")
	if b.o.memProfile != "" {
		f, err := os.Create(b.o.memProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		runtime.GC() // the profile shows the heap as of the last GC: drop the harness's garbage
		runtime.GC()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			return err
		}
		benchkit.Logf("heap profile written to %s", b.o.memProfile)
	}
	last := res.Samples[len(res.Samples)-1]
	res.RSSMiB, res.PeakRSSMiB = last.RSSMiB, last.HWMMiB
	res.Met = res.PeakRSSMiB <= res.GoalMiB
	return nil
}
