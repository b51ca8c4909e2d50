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

// stop ends the sampling; it returns the passes and the seconds the
// controller's Node PATCHes waited for the client-side rate limiter.
func (r *passRecorder) stop() ([]PassSample, float64) {
	close(r.stopCh)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.passes, benchkit.Round3(r.last.throttled - r.first.throttled)
}

// scene is one scenario's layout, built in a fresh armsim, with its Nodes.
type scene struct {
	cloud *simCloud
	l     layout
	bl    built
}

// prepare builds l on a fresh armsim (its files in the scenario's
// directory) and creates its Nodes in a cluster emptied of the earlier
// scenarios'; close the scene's cloud when done.
func (b *bench) prepare(ctx context.Context, name string, l layout) (*scene, error) {
	dir, err := b.scenarioDir(name)
	if err != nil {
		return nil, err
	}
	cloud, err := startCloud(dir)
	if err != nil {
		return nil, err
	}
	s := &scene{cloud: cloud, l: l}
	if s.bl, err = cloud.build(l); err == nil {
		err = b.freshNodes(ctx, s.bl.nodes)
	}
	if err != nil {
		cloud.close()
		return nil, err
	}
	return s, nil
}

// freshNodes empties the cluster of the earlier scenarios' Nodes and
// NodeTagSyncs and creates nodes.
func (b *bench) freshNodes(ctx context.Context, nodes []nodeSpec) error {
	if err := b.reset(ctx); err != nil {
		return err
	}
	return b.createNodes(ctx, nodes)
}

// estate is what a scenario syncs: the cloud as its measurements see it,
// the labels each Node must end up with, and how its NodeTagSync is made.
type estate struct {
	cloud  benchCloud
	expect map[string]map[string]string
	create func(context.Context) error
}

// azureEstate is the scene's armsim with a default NodeTagSync.
func (b *bench) azureEstate(s *scene) estate {
	return estate{cloud: s.cloud, expect: expected(s.bl.nodes), create: func(ctx context.Context) error { return b.createSync(ctx, nil) }}
}

// stop stops a controller, logging a failure.
func stop(c controller) {
	if err := c.Stop(); err != nil {
		benchkit.Logf("stopping the controller: %v", err)
	}
}

// coldAndResync runs goal 1 (cold sync of 1000 scale-set nodes and 50 VMs)
// and, on the converged cluster, goal 2 (unchanged-cluster resyncs).
func (b *bench) coldAndResync(ctx context.Context, withResync bool) (*ColdResult, *ResyncResult, error) {
	var l layout
	for i := range b.o.coldScaleSets {
		name := fmt.Sprintf("pool%02d", i)
		l.pools = append(l.pools, pool{rg: "mc_bench_aks_westeurope", name: name, size: b.o.coldPerSet, tags: benchkit.PoolTags(i, name)})
	}
	for i := range b.o.coldVMs {
		l.vms = append(l.vms, vm{rg: "rg-legacy-vms", name: fmt.Sprintf("vm-legacy-%03d", i), tags: vmTags(i)})
	}
	s, err := b.prepare(ctx, "cold", l)
	if err != nil {
		return nil, nil, err
	}
	defer s.cloud.close()
	ctl, err := b.startInProcess(ctx, s.cloud)
	if err != nil {
		return nil, nil, err
	}
	defer stop(ctl)

	cold := &ColdResult{
		Nodes: len(s.bl.nodes), ScaleSets: len(l.pools), NodesPerScaleSet: b.o.coldPerSet, VMs: len(l.vms),
		ResourceGroups: len(s.bl.groups), NodeObjectBytes: b.nodeSize(s.bl.nodes[0]), GoalSeconds: 30,
	}
	cold.Phase, err = b.initialSync(ctx, "cold sync", b.azureEstate(s), ctl)
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
		Nodes: len(s.bl.nodes), ScaleSets: len(l.pools), ResourceGroups: len(s.bl.groups),
		ReadBudget: len(l.pools) + len(s.bl.groups), PassesPerHour: 12,
		NaiveReadsPerPass: len(s.bl.nodes), NaiveReadsPerHour: 12 * len(s.bl.nodes),
	}
	return cold, rs, b.resyncs(ctx, "resync", s.cloud, ctl, rs)
}

// resyncs measures -resyncs unchanged-cluster passes into rs.
func (b *bench) resyncs(ctx context.Context, what string, cloud benchCloud, ctl controller, rs *ResyncResult) error {
	for i := range b.o.resyncs {
		r, err := b.resyncOnce(ctx, cloud, ctl)
		if err != nil {
			return fmt.Errorf("%s %d: %w", what, i+1, err)
		}
		rs.Runs = append(rs.Runs, r)
		benchkit.Logf("%s %d: pass %.3fs; cloud %d reads (%s), %d writes; %d node writes (%d changed resourceVersions)",
			what, i+1, r.PassSeconds, r.Calls.Reads, benchkit.OpsLine(r.Calls.ByOp), r.Calls.Writes, r.NodeWrites, r.NodesChanged)
	}
	rs.summarize()
	return nil
}

// initialSync creates the estate's NodeTagSync and measures until every
// node carries its labels, then until the controller is quiet.
func (b *bench) initialSync(ctx context.Context, what string, e estate, ctl controller) (Phase, error) {
	return b.phase(ctx, what, e.cloud, ctl, e.expect, time.Time{}, e.create)
}

// phase measures from trigger until every node carries its expected
// labels, until the status shows a fresh pass finished after prev, and
// until the controller is quiet; and what that cost.
func (b *bench) phase(ctx context.Context, what string, cloud benchCloud, ctl controller, expect map[string]map[string]string,
	prev time.Time, trigger func(context.Context) error) (Phase, error) {
	var ph Phase
	b.nodes.expectLabels(expect)
	b.nodes.ResetWrites()
	cloud.resetCalls()
	provBefore := ctl.Calls()
	rec := recordPasses(ctl)
	err := b.awaitPhase(ctx, what, prev, trigger, ctl, &ph)
	ph.PassLog, ph.KubeRateLimitWaitSeconds = rec.stop()
	if err != nil {
		return ph, err
	}
	ph.Calls = cloud.stats(benchkit.DiffCalls(provBefore, ctl.Calls()))
	ph.NodeWrites = b.nodes.writesSeen()
	if nts, err := b.getSync(ctx); err == nil {
		ph.Synced, ph.Errors, ph.Conflicts = int(nts.Status.SyncedNodes), int(nts.Status.ErrorCount), int(nts.Status.ConflictCount)
	}
	return ph, nil
}

// awaitPhase triggers a phase and waits for its labels, its status and
// the quiet after it.
func (b *bench) awaitPhase(ctx context.Context, what string, prev time.Time, trigger func(context.Context) error, ctl controller, ph *Phase) error {
	t0 := time.Now()
	if err := trigger(ctx); err != nil {
		return err
	}
	at, err := b.nodes.waitExpected(ctx, what, b.o.Timeout)
	if err != nil {
		return err
	}
	ph.LabelsSeconds = benchkit.Secs(at.Sub(t0))
	seen, _, err := b.waitFullSyncAfter(ctx, prev)
	if err != nil {
		return err
	}
	ph.StatusSeconds = benchkit.Secs(seen.Sub(t0))
	return b.waitQuiet(ctx, 3*time.Second, ctl)
}

// resyncOnce asks for a pass with fresh cloud reads on an unchanged cluster
// and counts what it cost.
func (b *bench) resyncOnce(ctx context.Context, cloud benchCloud, ctl controller) (ResyncRun, error) {
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
	cloud.resetCalls()
	provBefore := ctl.Calls()
	b.nodes.ResetWrites()
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
	if err := b.waitQuiet(ctx, 3*time.Second, ctl); err != nil {
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
	r.Calls = cloud.stats(benchkit.DiffCalls(provBefore, ctl.Calls()))
	r.NodeWrites = b.nodes.writesSeen()
	r.NodesChanged = changedVersions(before, after)
	return r, nil
}

// fanOut runs goal 3: a portal edit on one 500-node scale set, then a sync
// request; time until all 500 nodes show the new values.
func (b *bench) fanOut(ctx context.Context) (*FanOutResult, error) {
	s, err := b.prepare(ctx, "fanout", layout{pools: []pool{{rg: "mc_fanout_aks_westeurope", name: "bigpool", size: b.o.fanOutNodes, tags: benchkit.PoolTags(0, "bigpool")}}})
	if err != nil {
		return nil, err
	}
	defer s.cloud.close()
	ctl, err := b.startInProcess(ctx, s.cloud)
	if err != nil {
		return nil, err
	}
	defer stop(ctl)
	return b.fanOutEdit(ctx, b.azureEstate(s), ctl, s.bl.nodes, labelsFor, func(_ context.Context, edit map[string]string) error {
		return s.cloud.srv.SetTags(s.bl.scaleSets["bigpool"], edit)
	})
}

// fanOutEdit syncs the estate, then measures goal 3: set edits the tags of
// the one resource all nodes share in the cloud, the harness requests a
// sync (the controller polls), and the clock runs from that request until
// every node shows the edit as labels (labels maps tags to them).
func (b *bench) fanOutEdit(ctx context.Context, e estate, ctl controller, nodes []nodeSpec,
	labels func(map[string]string) map[string]string, set func(context.Context, map[string]string) error) (*FanOutResult, error) {
	res := &FanOutResult{Nodes: len(nodes), GoalSeconds: 10}
	var err error
	if res.Initial, err = b.initialSync(ctx, "fan-out initial sync", e, ctl); err != nil {
		return res, err
	}
	edit := map[string]string{"env": "canary", "release": "r42"}
	res.Edit = edit
	expect := map[string]map[string]string{}
	for _, n := range nodes {
		expect[n.name] = labels(edit)
	}
	prev, err := b.lastFullSync(ctx)
	if err != nil {
		return res, err
	}
	nextSecond(prev)
	if err := set(ctx, edit); err != nil {
		return res, err
	}
	if res.Phase, err = b.phase(ctx, "fan-out", e.cloud, ctl, expect, prev, b.requestSync); err != nil {
		return res, err
	}
	res.Met = res.Phase.LabelsSeconds <= res.GoalSeconds
	benchkit.Logf("fan-out: %d nodes show the edit %.2fs after the sync request; cloud %d reads, %d writes; %d node writes",
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
	var l layout
	for i := range b.o.memSets {
		name := fmt.Sprintf("mpool%02d", i)
		rg := fmt.Sprintf("mc_mem_aks_%d", i%max(b.o.memGroups, 1))
		l.pools = append(l.pools, pool{rg: rg, name: name, size: b.o.memPerSet, tags: benchkit.PoolTags(i, name)})
	}
	s, err := b.prepare(ctx, "memory-"+variant, l)
	if err != nil {
		return nil, err
	}
	defer s.cloud.close()
	res := &MemoryResult{Variant: variant, Nodes: len(s.bl.nodes), ScaleSets: len(l.pools), ResourceGroups: len(s.bl.groups),
		NodeObjectBytes: b.nodeSize(s.bl.nodes[0]), NodeShape: b.o.nodeShape(), GoalMiB: 150}

	if b.o.memoryMode == "in-process" && variant == variantTagsyncRun {
		res.Mode = "in-process (requested): RSS includes armsim and the harness"
		return res, b.memoryInProcess(ctx, s, res)
	}
	sep, err := b.startVariant(ctx, s, variant, res)
	if err != nil {
		if variant != variantTagsyncRun {
			return res, err
		}
		res.SeparateProcessError = err.Error()
		benchkit.Logf("memory: `tagsync run` as a separate process failed, falling back to in-process numbers: %v", err)
		return res, b.memoryInProcess(ctx, s, res)
	}
	defer stop(sep)
	res.Command = sep.Command
	return res, b.memoryPhases(ctx, variant, b.azureEstate(s), sep, res, sep.sampler(res))
}

// sampler samples the process's memory into res.Samples.
func (p separate) sampler(res *MemoryResult) func(what string) error {
	return func(what string) error {
		if err := p.Running(); err != nil {
			return err
		}
		s, err := p.Sample(what)
		if err != nil {
			return err
		}
		res.Samples = append(res.Samples, s)
		benchkit.Logf("memory %s (%s): VmRSS %.1f MiB, VmHWM %.1f MiB, Go heap in use %.1f MiB, CPU %.1fs", res.Variant, what, s.RSSMiB, s.HWMMiB, s.GoHeapInuseMiB, s.CPUSeconds)
		return nil
	}
}

// startVariant starts `tagsync run` as the memory variant has it.
func (b *bench) startVariant(ctx context.Context, s *scene, variant string, res *MemoryResult) (separate, error) {
	var extra []string
	switch variant {
	case variantTagsyncRun:
		res.Mode = "separate process: tagsync run"
	case variantMemoryLimit:
		res.Mode = "separate process: tagsync run --memory-limit " + experimentLimit
		extra = []string{"--memory-limit", experimentLimit}
	default:
		return separate{}, fmt.Errorf("unknown memory variant %q (want %s or %s)", variant, variantTagsyncRun, variantMemoryLimit)
	}
	azureFlags, err := benchkit.AzureFlags(s.cloud.srv, s.cloud.dir)
	if err != nil {
		return separate{}, err
	}
	return b.startRun(ctx, s.cloud.dir, append(azureFlags, extra...))
}

// memoryPhases runs the controller through a cold sync, a fresh resync and
// 10 s idle, sampling its memory before and after each, and judges the
// last sample.
func (b *bench) memoryPhases(ctx context.Context, what string, e estate, ctl controller, res *MemoryResult, sample func(what string) error) error {
	if err := sample("started, informers synced over all nodes, no NodeTagSync"); err != nil {
		return err
	}
	var err error
	if res.Sync, err = b.initialSync(ctx, "memory cold sync ("+what+")", e, ctl); err != nil {
		return err
	}
	benchkit.Logf("memory %s: %d nodes labelled in %.2fs", what, res.Nodes, res.Sync.LabelsSeconds)
	if err := sample("converged (all labels written)"); err != nil {
		return err
	}
	r, err := b.resyncOnce(ctx, e.cloud, ctl)
	if err != nil {
		return err
	}
	res.Resync = &r
	time.Sleep(10 * time.Second)
	if err := sample("after a fresh resync and 10s idle"); err != nil {
		return err
	}
	last := res.Samples[len(res.Samples)-1]
	res.RSSMiB, res.PeakRSSMiB = last.RSSMiB, last.HWMMiB
	res.Met = res.PeakRSSMiB <= res.GoalMiB
	return nil
}

// memoryInProcess runs the controller in this process (the fallback, or
// -memory-mode in-process for a heap profile): the RSS then includes armsim,
// the harness and its watch, so it over-states the controller; the Go heap
// numbers are given too.
func (b *bench) memoryInProcess(ctx context.Context, s *scene, res *MemoryResult) error {
	if res.Mode == "" {
		res.Mode = "in-process (fallback): RSS includes armsim and the harness"
	}
	ctl, err := b.startInProcess(ctx, s.cloud)
	if err != nil {
		return err
	}
	defer func() { _ = ctl.Stop() }()
	err = b.memoryPhases(ctx, "in-process", b.azureEstate(s), ctl, res, func(what string) error {
		rss, hwm, _ := benchkit.ProcMemory(os.Getpid())
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s := benchkit.MemorySample{At: what, RSSMiB: benchkit.MiB(rss), HWMMiB: benchkit.MiB(hwm), GoHeapInuseMiB: benchkit.MiB(int64(ms.HeapInuse)), GoSysMiB: benchkit.MiB(int64(ms.Sys)),
			Goroutines: runtime.NumGoroutine(), CPUSeconds: benchkit.ProcCPU(os.Getpid())}
		res.Samples = append(res.Samples, s)
		benchkit.Logf("memory (%s): VmRSS %.1f MiB, VmHWM %.1f MiB, Go heap in use %.1f MiB", what, s.RSSMiB, s.HWMMiB, s.GoHeapInuseMiB)
		return nil
	})
	if err != nil || b.o.memProfile == "" {
		return err
	}
	return b.writeHeapProfile()
}

// writeHeapProfile writes this process's heap profile to -memprofile.
func (b *bench) writeHeapProfile() error {
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
	return nil
}
