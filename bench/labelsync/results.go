package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// Results is everything one run measured; it is written as JSON.
type Results struct {
	benchkit.Header
	Initial *InitialResult `json:"initialSync,omitempty"`
	Change  *LatencyResult `json:"change,omitempty"`
	Revert  *LatencyResult `json:"revert,omitempty"`
	Steady  *SteadyResult  `json:"steady,omitempty"`
	Memory  *MemoryResult  `json:"memory,omitempty"`
}

// InitialResult is the first sync of every Node (not a goal).
type InitialResult struct {
	// LabelsSeconds: from creating the profile until the harness's watches
	// saw the last Node carry its labels.
	LabelsSeconds float64 `json:"labelsSeconds"`
	// StatusSeconds: until the profile was Ready with every host in sync.
	StatusSeconds float64 `json:"statusSeconds"`
	Traffic
}

// Traffic is what a phase wrote: Writes every write the harness's watches
// saw, by resource and operation ("nodes.update"); Controller the
// controller's own counts from its metrics (its requests by cluster and
// method, its Node writes by result).
type Traffic struct {
	Writes     map[string]int `json:"writes"`
	Controller map[string]int `json:"controller"`
}

// summary is "writes ...; controller ...".
func (t Traffic) summary() string {
	return fmt.Sprintf("writes %s; controller %s", benchkit.OpsLine(t.Writes), benchkit.OpsLine(t.Controller))
}

// LatencyResult is goal A or B: one latency per edit, from just before the
// request to the watch event that showed the Node right.
type LatencyResult struct {
	GoalSeconds float64              `json:"goalSeconds"`
	Seconds     []float64            `json:"seconds"`
	ByOp        map[string][]float64 `json:"secondsByOperation"`
	Median      float64              `json:"median"`
	P99         float64              `json:"p99"`
	Max         float64              `json:"max"`
	// Traffic is during the scenario and until it settled.
	Traffic
	Met bool `json:"met"`
}

func (r *LatencyResult) add(op string, d time.Duration) {
	s := benchkit.Secs(d)
	r.Seconds = append(r.Seconds, s)
	if r.ByOp == nil {
		r.ByOp = map[string][]float64{}
	}
	r.ByOp[op] = append(r.ByOp[op], s)
}

// finish computes the quantiles (nearest rank) and the verdict.
func (r *LatencyResult) finish(t Traffic) {
	r.Traffic = t
	s := append([]float64(nil), r.Seconds...)
	sort.Float64s(s)
	if len(s) == 0 {
		return
	}
	rank := func(q float64) float64 { return s[max(0, int(math.Ceil(q*float64(len(s))))-1)] }
	r.Median, r.P99, r.Max = rank(0.5), rank(0.99), s[len(s)-1]
	r.Met = r.Median <= r.GoalSeconds && r.P99 <= r.GoalSeconds
}

// SteadyResult is goal C.
type SteadyResult struct {
	Resyncs        int     `json:"resyncs"`
	ResyncInterval string  `json:"resyncInterval"`
	WindowSeconds  float64 `json:"windowSeconds"`
	Passes         int     `json:"passes"`
	PassSeconds    float64 `json:"passSecondsMean"`
	// Traffic is in the window.
	Traffic
	NodeWrites int `json:"nodeWrites"`
	HostWrites int `json:"hostAndClusterAPIWrites"`
	// StatusWrites are patches of the profile's status.
	StatusWrites int  `json:"profileStatusWrites"`
	Met          bool `json:"met"`
}

// judge counts the writes by kind. The goal is no write to a Node, host
// or Cluster API object; the profile's status is reported (its
// lastSyncTime is refreshed once per resync interval by design).
func (r *SteadyResult) judge() {
	for k, n := range r.Writes {
		switch res, _, _ := strings.Cut(k, "."); res {
		case "nodes":
			r.NodeWrites += n
		case "labelsyncprofiles":
			r.StatusWrites += n
		case "events", "secrets":
		default:
			r.HostWrites += n
		}
	}
	r.Met = r.Passes >= r.Resyncs && r.NodeWrites == 0 && r.HostWrites == 0 && r.Writes["events.create"]+r.Writes["events.update"] == 0
}

// MemoryResult is goal D.
type MemoryResult struct {
	benchkit.Memory
	Hosts    int `json:"hosts"`
	Clusters int `json:"workloadClusters"`
	// Parts split VmRSS, sample by sample, into anonymous memory and file
	// pages (mostly the tagsync binary's code and data, mapped).
	Parts []RSSParts `json:"rssParts"`
}

// RSSParts is one sample's VmRSS split.
type RSSParts struct {
	At      string  `json:"at"`
	AnonMiB float64 `json:"rssAnonMiB"`
	FileMiB float64 `json:"rssFileMiB"`
}

// snapshot is the write counts and controller metrics at one moment.
type snapshot struct {
	writes      map[string]int
	controller  map[string]int
	passes      float64
	passSeconds float64
}

// snapshot reads the harness's write counts and the controller's metrics.
func (b *bench) snapshot() snapshot {
	s := snapshot{writes: b.writesSeen(), controller: map[string]int{}}
	if text, err := b.ctrl.Metrics(); err == nil {
		s.controller = b.controllerCounts(text)
		s.passes = benchkit.MetricValue(text, "tagsync_labelsync_passes_total", `kind="LabelSyncProfile"`)
		s.passSeconds = benchkit.MetricValue(text, "tagsync_labelsync_pass_duration_seconds_sum", `kind="LabelSyncProfile"`)
	}
	return s
}

// settleWrites waits until no write has been seen for 2 s and returns the
// traffic since before.
func (b *bench) settleWrites(ctx context.Context, before snapshot) Traffic {
	if err := b.quiet(ctx); err != nil {
		benchkit.Logf("writes did not settle: %v", err)
	}
	return b.snapshot().since(before)
}

// since is the traffic from before to s.
func (s snapshot) since(before snapshot) Traffic {
	return Traffic{Writes: benchkit.DiffCalls(before.writes, s.writes), Controller: benchkit.DiffCalls(before.controller, s.controller)}
}

// writesSeen sums the harness's write counts: Nodes over every workload
// cluster, the management objects by resource ("nodes.update",
// "baremetalhosts.update", ...).
func (b *bench) writesSeen() map[string]int {
	out := map[string]int{}
	add := func(w *benchkit.Watch) {
		writes, _ := w.WritesSeen()
		for op, n := range writes {
			out[w.Resource+"."+op] += n
		}
	}
	for _, w := range b.Workloads {
		add(w.Nodes)
	}
	for _, w := range b.mgmtWatches {
		add(w)
	}
	return out
}

// resetWrites zeroes every watch's write counts.
func (b *bench) resetWrites() {
	for _, w := range b.Workloads {
		w.Nodes.ResetWrites()
	}
	for _, w := range b.mgmtWatches {
		w.ResetWrites()
	}
}

// controllerCounts reads, from the controller's metrics, its requests by
// cluster (management or workload) and method, and its Node writes by
// result.
func (b *bench) controllerCounts(text string) map[string]int {
	out := benchkit.KubeRequests(text, b.Mgmt.Config.Host)
	benchkit.EachSample(text, "tagsync_labelsync_node_writes_total", func(series string, v float64) {
		out["nodeWrites."+benchkit.Label(series, "result")] += int(v)
	})
	return out
}

func (o options) settings() map[string]any {
	return map[string]any{
		"scenarios": o.Scenarios,
		"estate": fmt.Sprintf("1 management + %d workload control planes; %d BareMetalHosts per workload cluster, each with Metal3Machine, Machine (nodeRef) and Node",
			o.clusters, o.hostsPer),
		"profile":       fmt.Sprintf("one LabelSyncProfile selecting every host, prefixes %s and %s, resyncInterval %s", benchkit.RackPrefix, benchkit.SecurityPrefix, o.resync),
		"hostLabels":    "3 in scope, 1 out of scope, the selector label",
		"nodeShape":     fmt.Sprintf("kubelet-like labels, annotations, spec and status with %d images", o.nodeImages),
		"changes":       o.changes,
		"reverts":       o.reverts,
		"steadyResyncs": o.steadyResyncs,
		"memoryLimit":   o.memoryLimit,
	}
}

// Results are what the scenarios measured.
func (b *bench) Results() benchkit.Results { return b.res }

// Goals renders the verdicts.
func (b *bench) Goals() []benchkit.Goal {
	r, o := b.res, b.o
	var g []benchkit.Goal
	lat := func(name string, l *LatencyResult) {
		if l == nil || len(l.Seconds) == 0 {
			return
		}
		g = append(g, benchkit.Goal{Goal: fmt.Sprintf("%s (%d, one after the other)", name, len(l.Seconds)), Target: "median and p99 <= 1 s",
			Measured: fmt.Sprintf("median %.3f s, p99 %.3f s (max %.3f s)", l.Median, l.P99, l.Max), Met: l.Met})
	}
	lat("A. host label change reaches its Node", r.Change)
	lat("B. Node-side edit reverted", r.Revert)
	if s := r.Steady; s != nil && s.Passes > 0 {
		g = append(g, benchkit.Goal{Goal: fmt.Sprintf("C. steady resync (%d periodic passes over %d hosts)", s.Passes, o.clusters*o.hostsPer),
			Target:   "0 Node, host and Cluster API writes",
			Measured: fmt.Sprintf("%d Node, %d host/CAPI writes; %d profile status patches", s.NodeWrites, s.HostWrites, s.StatusWrites), Met: s.Met})
	}
	if m := r.Memory; m != nil && o.Has("memory") {
		limit := ""
		if o.memoryLimit != "" {
			limit = ", --memory-limit " + o.memoryLimit
		}
		g = append(g, benchkit.Goal{Goal: fmt.Sprintf("D. controller RSS (%d hosts in %d workload clusters; %s%s)", m.Hosts, m.Clusters, m.Scenarios, limit),
			Target: "<= 150 MiB", Measured: fmt.Sprintf("peak %.0f MiB, settled %.0f MiB", m.PeakRSSMiB, m.RSSMiB), Met: m.Met})
	}
	return g
}

// Report prints the scenarios' details.
func (b *bench) Report(w io.Writer) {
	r := b.res
	if i := r.Initial; i != nil {
		fmt.Fprintf(w, "Initial sync: labels on every Node %.2fs after the profile was created, status %.2fs; %s\n",
			i.LabelsSeconds, i.StatusSeconds, i.Traffic.summary())
	}
	for _, l := range []struct {
		name string
		r    *LatencyResult
	}{{"A (host label change)", r.Change}, {"B (Node edit reverted)", r.Revert}} {
		if l.r == nil {
			continue
		}
		fmt.Fprintf(w, "%s: median %.3fs, p99 %.3fs, max %.3fs; %s\n", l.name, l.r.Median, l.r.P99, l.r.Max, l.r.Traffic.summary())
	}
	if s := r.Steady; s != nil {
		fmt.Fprintf(w, "C (steady): %d periodic passes, %.3fs each, in %.1fs; %s\n", s.Passes, s.PassSeconds, s.WindowSeconds, s.Traffic.summary())
	}
	if m := r.Memory; m != nil {
		fmt.Fprintf(w, "Memory of tagsync run (%d hosts, %d workload clusters):\n", m.Hosts, m.Clusters)
		for i, s := range m.Samples {
			var p RSSParts
			if i < len(m.Parts) {
				p = m.Parts[i]
			}
			fmt.Fprintf(w, "  %-30s VmRSS %6.1f MiB (anon %5.1f, file %5.1f)  VmHWM %6.1f MiB  Go heap in use %5.1f MiB  CPU %5.1fs  goroutines %d\n",
				s.At, s.RSSMiB, p.AnonMiB, p.FileMiB, s.HWMMiB, s.GoHeapInuseMiB, s.CPUSeconds, s.Goroutines)
		}
	}
}

// rssParts reads how much of a process's RSS is anonymous memory (the Go
// heap, stacks, runtime) and how much file pages (the mapped binary), in
// MiB.
func rssParts(pid int) (anon, file float64) {
	v, _ := benchkit.ProcStatus(pid, "RssAnon", "RssFile")
	return benchkit.MiB(v[0]), benchkit.MiB(v[1])
}

// saveHeapProfile writes the controller's heap profile to path.
func (b *bench) saveHeapProfile(path string) error {
	resp, err := http.Get("http://" + b.pprofAddr + "/debug/pprof/heap")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile: HTTP %d", resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
