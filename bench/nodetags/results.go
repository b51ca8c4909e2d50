package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/cloud/azure"
)

// Results is everything one run measured; it is written as JSON.
type Results struct {
	benchkit.Header
	Cold   *ColdResult   `json:"coldSync,omitempty"`
	Resync *ResyncResult `json:"resync,omitempty"`
	FanOut *FanOutResult `json:"fanOut,omitempty"`
	Memory *MemoryResult `json:"memory,omitempty"`
	AWS    *AWSResult    `json:"aws,omitempty"`
}

// Phase is what one measured phase cost and how long it took.
type Phase struct {
	// LabelsSeconds: from the trigger (NodeTagSync created / sync
	// requested) until the harness's watch saw every expected label.
	LabelsSeconds float64 `json:"labelsSeconds"`
	// StatusSeconds: until the status showed a finished fresh pass.
	StatusSeconds float64      `json:"statusSeconds"`
	Calls         callStats    `json:"arm"`
	NodeWrites    int          `json:"nodeWrites"`
	PassLog       []PassSample `json:"passes"`
	// KubeRateLimitWaitSeconds is how long the controller's Node PATCHes
	// waited for client-go's client-side rate limiter, summed over the
	// requests (in-process controller only).
	KubeRateLimitWaitSeconds float64 `json:"kubeRateLimitWaitSeconds,omitempty"`
	Synced                   int     `json:"statusSyncedNodes"`
	Errors                   int     `json:"statusErrors"`
	Conflicts                int     `json:"statusConflicts"`
}

// PassSample is one or more passes that ended between two samples.
type PassSample struct {
	EndedAfter float64 `json:"endedAfterSeconds"`
	Passes     int     `json:"passes"`
	Fresh      int     `json:"fresh"`
	Seconds    float64 `json:"seconds"`
}

// ColdResult is goal 1.
type ColdResult struct {
	Nodes            int     `json:"nodes"`
	ScaleSets        int     `json:"scaleSets"`
	NodesPerScaleSet int     `json:"nodesPerScaleSet"`
	VMs              int     `json:"standaloneVMs"`
	ResourceGroups   int     `json:"resourceGroups"`
	NodeObjectBytes  int     `json:"nodeObjectBytes"`
	GoalSeconds      float64 `json:"goalSeconds"`
	Phase            Phase   `json:"sync"`
	Met              bool    `json:"met"`
}

// ResyncRun is one unchanged-cluster resync.
type ResyncRun struct {
	WallSeconds  float64   `json:"wallSeconds"`
	PassSeconds  float64   `json:"passSeconds"`
	Passes       int       `json:"passes"`
	Calls        callStats `json:"arm"`
	NodeWrites   int       `json:"nodeWrites"`
	NodesChanged int       `json:"nodesWithNewResourceVersion"`
}

// ResyncResult is goal 2.
type ResyncResult struct {
	Nodes          int         `json:"nodes"`
	ScaleSets      int         `json:"scaleSets"`
	ResourceGroups int         `json:"resourceGroups"`
	ReadBudget     int         `json:"readBudgetPerPass"`
	Runs           []ResyncRun `json:"runs"`
	// Worst case over the runs.
	Reads, Writes, NodeWrites int
	PassSecondsMedian         float64 `json:"passSecondsMedian"`
	PassesPerHour             int     `json:"passesPerHour"`
	ReadsPerHour              int     `json:"armReadsPerHour"`
	NaiveReadsPerPass         int     `json:"naiveReadsPerPass"`
	NaiveReadsPerHour         int     `json:"naiveReadsPerHour"`
	Met                       bool    `json:"met"`
}

func (r *ResyncResult) summarize() {
	var ds []float64
	for _, run := range r.Runs {
		r.Reads = max(r.Reads, run.Calls.Reads)
		r.Writes = max(r.Writes, run.Calls.Writes)
		r.NodeWrites = max(r.NodeWrites, run.NodeWrites, run.NodesChanged)
		ds = append(ds, run.PassSeconds)
	}
	sort.Float64s(ds)
	if len(ds) > 0 {
		r.PassSecondsMedian = ds[len(ds)/2]
	}
	r.ReadsPerHour = r.Reads * r.PassesPerHour
	r.Met = len(r.Runs) > 0 && r.Reads <= r.ReadBudget && r.Writes == 0 && r.NodeWrites == 0
}

// FanOutResult is goal 3.
type FanOutResult struct {
	Nodes       int               `json:"nodes"`
	GoalSeconds float64           `json:"goalSeconds"`
	Initial     Phase             `json:"initialSync"`
	Edit        map[string]string `json:"edit"`
	Phase       Phase             `json:"afterEdit"`
	Met         bool              `json:"met"`
}

// MemoryResult is goal 4.
type MemoryResult struct {
	Variant              string                  `json:"variant"`
	Nodes                int                     `json:"nodes"`
	ScaleSets            int                     `json:"scaleSets"`
	ResourceGroups       int                     `json:"resourceGroups"`
	NodeObjectBytes      int                     `json:"nodeObjectBytes"`
	NodeShape            string                  `json:"nodeShape"`
	Mode                 string                  `json:"mode"`
	Command              []string                `json:"command,omitempty"`
	SeparateProcessError string                  `json:"separateProcessError,omitempty"`
	Sync                 Phase                   `json:"sync"`
	Resync               *ResyncRun              `json:"resync,omitempty"`
	Samples              []benchkit.MemorySample `json:"samples"`
	RSSMiB               float64                 `json:"rssMiB"`
	PeakRSSMiB           float64                 `json:"peakRSSMiB"`
	GoalMiB              float64                 `json:"goalMiB"`
	Met                  bool                    `json:"met"`
	// Experiments are variants measured the same way (not the goal).
	Experiments []*MemoryResult `json:"experiments,omitempty"`
}

func (o options) settings() map[string]any {
	return map[string]any{
		"nodeShape": o.nodeShape(),
		"scenarios": o.Scenarios, "nodeImages": o.nodeImages, "nodeStatus": o.nodeStatus, "resyncs": o.resyncs,
		"cold":                 fmt.Sprintf("%d scale sets x %d + %d VMs", o.coldScaleSets, o.coldPerSet, o.coldVMs),
		"fanOut":               fmt.Sprintf("1 scale set x %d", o.fanOutNodes),
		"memory":               fmt.Sprintf("%d scale sets x %d in %d resource groups", o.memSets, o.memPerSet, o.memGroups),
		"controllerKubeClient": "QPS 100, burst 200 (tagsync run defaults)",
		"azureProvider": fmt.Sprintf("defaults: cache TTL %s, reads %d/s burst %d, writes %d/s burst %d, %d retries, write method TagsAPI",
			azure.DefaultCacheTTL, azure.DefaultReadsPerSecond, azure.DefaultReadBurst, azure.DefaultWritesPerSecond, azure.DefaultWriteBurst, azure.DefaultMaxRetries),
		"aws":    fmt.Sprintf("%d groups x %d + %d instances on moto", o.awsGroups, o.awsPerGroup, o.awsSolo),
		"armsim": "HTTPS, ARM throttling (reads 250 + 25/s, writes 200 + 10/s per subscription), synchronous writes, page size 100",
	}
}

// Results are what the scenarios measured.
func (b *bench) Results() benchkit.Results { return b.res }

// Goals renders the verdicts.
func (b *bench) Goals() []benchkit.Goal {
	r := b.res
	var g []benchkit.Goal
	if c := r.Cold; c != nil {
		g = append(g, benchkit.Goal{
			Goal:     fmt.Sprintf("1. cold sync, %d nodes (%d scale sets x %d + %d VMs)", c.Nodes, c.ScaleSets, c.NodesPerScaleSet, c.VMs),
			Target:   "<= 30 s",
			Measured: fmt.Sprintf("%.1f s", c.Phase.LabelsSeconds),
			Met:      c.Met && c.Phase.LabelsSeconds > 0,
		})
	}
	if s := r.Resync; s != nil {
		g = append(g,
			benchkit.Goal{Goal: "2. resync, unchanged cluster: ARM reads per pass", Target: fmt.Sprintf("<= 1 per scale set or resource group (<= %d)", s.ReadBudget),
				Measured: fmt.Sprintf("%d", s.Reads), Met: len(s.Runs) > 0 && s.Reads <= s.ReadBudget},
			benchkit.Goal{Goal: "2. resync: ARM writes per pass", Target: "0", Measured: fmt.Sprint(s.Writes), Met: len(s.Runs) > 0 && s.Writes == 0},
			benchkit.Goal{Goal: "2. resync: Node writes per pass", Target: "0", Measured: fmt.Sprint(s.NodeWrites), Met: len(s.Runs) > 0 && s.NodeWrites == 0},
		)
	}
	if f := r.FanOut; f != nil {
		g = append(g, fanOutGoal("3. tag edit fan-out", f))
	}
	if m := r.Memory; m != nil {
		g = append(g, memoryGoal("4. controller memory", m))
	}
	if a := r.AWS; a != nil {
		g = append(g, awsGoals(a)...)
	}
	return g
}

// fanOutGoal is the verdict on a fan-out: all nodes within 10 s.
func fanOutGoal(what string, f *FanOutResult) benchkit.Goal {
	return benchkit.Goal{Goal: fmt.Sprintf("%s, %d nodes", what, f.Nodes), Target: "<= 10 s",
		Measured: fmt.Sprintf("%.1f s", f.Phase.LabelsSeconds), Met: f.Met && f.Phase.LabelsSeconds > 0}
}

// memoryGoal is the verdict on a memory run: peak RSS within the goal.
func memoryGoal(what string, m *MemoryResult) benchkit.Goal {
	measured := fmt.Sprintf("RSS %.0f MiB, peak %.0f MiB", m.RSSMiB, m.PeakRSSMiB)
	if m.SeparateProcessError != "" {
		measured += " (in-process fallback)"
	}
	return benchkit.Goal{Goal: fmt.Sprintf("%s, %d nodes", what, m.Nodes), Target: fmt.Sprintf("<= %.0f MiB", m.GoalMiB), Measured: measured, Met: m.Met && m.PeakRSSMiB > 0}
}

// Report prints the phases' details.
func (b *bench) Report(w io.Writer) {
	r := b.res
	if c := r.Cold; c != nil && c.Phase.LabelsSeconds > 0 {
		fmt.Fprintf(w, "Cold sync: labels %.2fs, status %.2fs; %d passes (%s); %d Node writes; status synced=%d errors=%d\n",
			c.Phase.LabelsSeconds, c.Phase.StatusSeconds, passCount(c.Phase.PassLog), passLine(c.Phase.PassLog), c.Phase.NodeWrites, c.Phase.Synced, c.Phase.Errors)
		fmt.Fprintf(w, "  ARM: %d reads, %d writes, %d answered 429; by operation: %s\n", c.Phase.Calls.Reads, c.Phase.Calls.Writes, c.Phase.Calls.Throttled, benchkit.OpsLine(c.Phase.Calls.ByOp))
	}
	if s := r.Resync; s != nil && len(s.Runs) > 0 {
		fmt.Fprintf(w, "Resync (%d runs): pass %.3fs median; ARM reads %d/pass -> %d/hour at 12 passes/hour; naive one GET per node: %d/pass -> %d/hour\n",
			len(s.Runs), s.PassSecondsMedian, s.Reads, s.ReadsPerHour, s.NaiveReadsPerPass, s.NaiveReadsPerHour)
		fmt.Fprintf(w, "  by operation (first run): %s\n", benchkit.OpsLine(s.Runs[0].Calls.ByOp))
	}
	if f := r.FanOut; f != nil {
		printFanOut(w, "Fan-out", f)
	}
	if m := r.Memory; m != nil {
		printMemory(w, m)
		for _, x := range m.Experiments {
			fmt.Fprintf(w, "Experiment %q (not the goal measurement):\n", x.Variant)
			printMemory(w, x)
		}
	}
	if a := r.AWS; a != nil {
		printAWS(w, a)
	}
}

func printFanOut(w io.Writer, what string, f *FanOutResult) {
	if f.Phase.LabelsSeconds == 0 {
		return
	}
	fmt.Fprintf(w, "%s: %d nodes in %.2fs after the request (status %.2fs); %d passes (%s); %d Node writes; cloud %d reads, %d writes, %d throttled\n",
		what, f.Nodes, f.Phase.LabelsSeconds, f.Phase.StatusSeconds, passCount(f.Phase.PassLog), passLine(f.Phase.PassLog), f.Phase.NodeWrites, f.Phase.Calls.Reads, f.Phase.Calls.Writes, f.Phase.Calls.Throttled)
	fmt.Fprintf(w, "  (initial %d-node sync: %.2fs)\n", f.Nodes, f.Initial.LabelsSeconds)
}

func printMemory(w io.Writer, m *MemoryResult) {
	fmt.Fprintf(w, "Memory (%s), %d nodes of %d bytes each (%s):\n", m.Mode, m.Nodes, m.NodeObjectBytes, m.NodeShape)
	benchkit.PrintSamples(w, 58, m.Samples)
	if m.Sync.LabelsSeconds > 0 {
		fmt.Fprintf(w, "  cold sync of %d nodes: %.2fs; cloud %d reads, %d writes, %d throttled; %d passes (%s)\n",
			m.Nodes, m.Sync.LabelsSeconds, m.Sync.Calls.Reads, m.Sync.Calls.Writes, m.Sync.Calls.Throttled, passCount(m.Sync.PassLog), passLine(m.Sync.PassLog))
	}
	if m.Resync != nil {
		fmt.Fprintf(w, "  resync of %d nodes: pass %.3fs, cloud %d reads (%s), %d writes, %d Node writes\n", m.Nodes, m.Resync.PassSeconds,
			m.Resync.Calls.Reads, benchkit.OpsLine(m.Resync.Calls.ByOp), m.Resync.Calls.Writes, m.Resync.NodeWrites)
	}
	if m.SeparateProcessError != "" {
		fmt.Fprintf(w, "  separate process failed: %s\n", m.SeparateProcessError)
	}
}

func passCount(ps []PassSample) int {
	n := 0
	for _, p := range ps {
		n += p.Passes
	}
	return n
}

// passLine renders pass durations: "3.21s(fresh) 0.80s 2x0.40s".
func passLine(ps []PassSample) string {
	var parts []string
	for _, p := range ps {
		s := fmt.Sprintf("%.2fs", p.Seconds)
		if p.Passes > 1 {
			s = fmt.Sprintf("%dx%.2fs", p.Passes, p.Seconds/float64(p.Passes))
		}
		switch {
		case p.Passes > 1 && p.Fresh > 0:
			s += fmt.Sprintf("(%d fresh)", p.Fresh)
		case p.Fresh > 0:
			s += "(fresh)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}
