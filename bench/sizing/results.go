package main

import (
	"fmt"
	"io"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// Results returns what was measured.
func (b *bench) Results() benchkit.Results { return b.res }

// Results is everything one run measured; it is written as JSON.
type Results struct {
	benchkit.Header
	Estate Estate `json:"estate"`
	// StartSeconds is from starting `tagsync run` until its workers ran
	// (the informers had synced).
	StartSeconds float64        `json:"startSeconds"`
	Cold         *ColdResult    `json:"cold,omitempty"`
	Latency      *LatencyResult `json:"latency,omitempty"`
	Resync       *ResyncResult  `json:"resync,omitempty"`
	Memory       *MemoryResult  `json:"memory,omitempty"`
}

// Estate is what the controller served.
type Estate struct {
	Nodes         int `json:"nodes"`
	ScaleSets     int `json:"scaleSets"`
	Classified    int `json:"classifiedResources"`
	Subscriptions int `json:"subscriptions"`
	Hosts         int `json:"hosts"`
	Clusters      int `json:"workloadClusters"`
	// NodeBytes and HostNodeBytes are the JSON size of one AKS-like Node
	// (management cluster) and of one workload cluster's Node.
	NodeBytes     int `json:"nodeBytes"`
	HostNodeBytes int `json:"workloadNodeBytes"`
	// Volumes are the bound PersistentVolumes (and claims) the workload
	// tags policy follows, in VolumeNamespaces namespaces.
	Volumes          int `json:"volumes"`
	VolumeNamespaces int `json:"volumeNamespaces"`
}

// Phase is what a scenario cost: wall time, the controller's CPU time (and
// its average in cores), armsim's calls and the controller's Kubernetes
// requests by cluster and method.
type Phase struct {
	Seconds    float64           `json:"seconds"`
	CPUSeconds float64           `json:"cpuSeconds"`
	CPUCores   float64           `json:"cpuCoresAverage"`
	ARM        benchkit.ARMTally `json:"arm"`
	Kube       map[string]int    `json:"kubeRequests"`
}

// ColdResult is the first sync of every object, all at once.
type ColdResult struct {
	Nodes       int     `json:"nodes"`
	GoalSeconds float64 `json:"nodeSyncGoalSeconds"`
	// NodeSyncSeconds: until the harness's watch saw the last Node carry
	// its scale set's tags; MetadataSeconds: until the CloudMetadata was
	// Ready with every resource in sync; LabelSyncSeconds: until the last
	// workload Node carried its host's labels, LabelStatusSeconds: until
	// the profile was Ready.
	NodeSyncSeconds    float64 `json:"nodeSyncSeconds"`
	MetadataSeconds    float64 `json:"metadataSeconds"`
	LabelSyncSeconds   float64 `json:"labelSyncSeconds"`
	LabelStatusSeconds float64 `json:"labelStatusSeconds"`
	// WorkloadSeconds: until the WorkloadTagPolicy reported every disk in
	// sync.
	WorkloadSeconds float64 `json:"workloadSeconds,omitempty"`
	NodeWrites      int     `json:"nodeWrites"`
	Phase
}

// LatencyResult is the cloud edits (events on) and the label sync's edits,
// made at the same time.
type LatencyResult struct {
	Cloud      *benchkit.EditLatency `json:"cloud"`
	HostChange benchkit.Spread       `json:"labelSyncHostChange"`
	NodeRevert benchkit.Spread       `json:"labelSyncNodeRevert"`
	Phase
}

// ResyncResult is one requested full pass of the node sync and of the
// metadata, each alone.
type ResyncResult struct {
	NodeSync Pass `json:"nodeSync"`
	Metadata Pass `json:"metadata"`
}

// Pass is one requested full pass: from the request to the status saying
// it was served; ReadBudget is its goal's ARM reads (node sync: a scale
// set or resource group each; metadata: discovery calls, one per 1000
// resources).
type Pass struct {
	Seconds    float64 `json:"seconds"`
	NodeWrites int     `json:"nodeWrites"`
	ReadBudget int     `json:"readBudget"`
	Phase
}

// MemoryResult is the memory goal.
type MemoryResult struct {
	benchkit.Memory
}

// Goals renders the verdicts.
func (b *bench) Goals() []benchkit.Goal {
	r := b.res
	var g []benchkit.Goal
	if c := r.Cold; c != nil {
		g = append(g, benchkit.Goal{Goal: fmt.Sprintf("node sync: cold sync of %d Nodes", c.Nodes),
			Target: fmt.Sprintf("<= %.0f s", c.GoalSeconds), Measured: fmt.Sprintf("%.1f s (%d Node writes)", c.NodeSyncSeconds, c.NodeWrites),
			Met: c.NodeSyncSeconds > 0 && c.NodeSyncSeconds <= c.GoalSeconds})
	}
	if l := r.Latency; l != nil {
		if e := l.Cloud; e != nil {
			g = append(g,
				benchkit.Goal{Goal: "node sync: portal edit -> labels, events on", Target: "p99 <= 5 s", Measured: e.Node.String(), Met: len(e.Node.Seconds) > 0 && e.Node.P99 <= 5},
				benchkit.Goal{Goal: "metadata: owned tag edit -> revert, events on", Target: "p99 <= 5 s", Measured: e.Metadata.String(), Met: len(e.Metadata.Seconds) > 0 && e.Metadata.P99 <= 5})
		}
		for _, s := range []struct {
			name string
			s    benchkit.Spread
		}{{"label sync: host label change -> Node", l.HostChange}, {"label sync: Node-side edit reverted", l.NodeRevert}} {
			g = append(g, benchkit.Goal{Goal: s.name, Target: "median and p99 <= 1 s",
				Measured: fmt.Sprintf("median %.3f s, p99 %.3f s (%d)", s.s.P50, s.s.P99, len(s.s.Seconds)), Met: len(s.s.Seconds) > 0 && s.s.P50 <= 1 && s.s.P99 <= 1})
		}
	}
	if rs := r.Resync; rs != nil {
		n, m := rs.NodeSync, rs.Metadata
		g = append(g,
			benchkit.Goal{Goal: "node sync: requested full pass, unchanged", Target: fmt.Sprintf("<= %d ARM reads, 0 ARM writes, 0 Node writes", n.ReadBudget),
				Measured: fmt.Sprintf("%d reads, %d writes, %d Node writes; %.2f s", n.ARM.Reads, n.ARM.Writes, n.NodeWrites, n.Seconds),
				Met:      n.ARM.Reads <= n.ReadBudget && n.ARM.Writes == 0 && n.NodeWrites == 0},
			benchkit.Goal{Goal: "metadata: requested full pass, unchanged", Target: fmt.Sprintf("<= %d discovery calls, 0 writes", m.ReadBudget),
				Measured: fmt.Sprintf("%d discovery, %d other reads, %d writes; %.2f s", m.ARM.Discovery, m.ARM.Reads-m.ARM.Discovery, m.ARM.Writes, m.Seconds),
				Met:      m.ARM.Discovery <= m.ReadBudget && m.ARM.Writes == 0})
	}
	if m := r.Memory; m != nil && b.o.Has("memory") && len(m.Samples) > 1 {
		limit := "no --memory-limit"
		if b.o.memoryLimit != "" {
			limit = "--memory-limit " + b.o.memoryLimit
		}
		e := r.Estate
		g = append(g, benchkit.Goal{Goal: fmt.Sprintf("RSS of the one process (%d Nodes, %d resources, %d hosts in %d clusters, %d PersistentVolumes; %s)", e.Nodes, e.Classified, e.Hosts, e.Clusters, e.Volumes, limit),
			Target: fmt.Sprintf("<= %.0f MiB", m.GoalMiB), Measured: fmt.Sprintf("peak %.1f MiB, settled %.1f MiB", m.PeakRSSMiB, m.RSSMiB), Met: m.Met})
	}
	return g
}

// Report prints what the verdict table does not say.
func (b *bench) Report(w io.Writer) {
	r := b.res
	e := r.Estate
	fmt.Fprintf(w, "Estate: %d AKS-like Nodes (%d bytes each) in %d scale sets; %d classified resources in %d subscriptions; %d hosts in %d workload clusters (Nodes of %d bytes); %d PersistentVolumes in %d namespaces\n",
		e.Nodes, e.NodeBytes, e.ScaleSets, e.Classified, e.Subscriptions, e.Hosts, e.Clusters, e.HostNodeBytes, e.Volumes, e.VolumeNamespaces)
	fmt.Fprintf(w, "Start: workers running %.1fs after tagsync run started\n", r.StartSeconds)
	phase := func(name string, p Phase) {
		fmt.Fprintf(w, "  %s: %.1fs, CPU %.1fs (%.2f cores); ARM %s; Kubernetes %s\n", name, p.Seconds, p.CPUSeconds, p.CPUCores,
			benchkit.OpsLine(p.ARM.ByOp), benchkit.OpsLine(p.Kube))
	}
	if c := r.Cold; c != nil {
		fmt.Fprintf(w, "Cold: node sync %.1fs, metadata %.1fs, label sync %.1fs (profile Ready %.1fs), workload tags %.1fs\n", c.NodeSyncSeconds, c.MetadataSeconds, c.LabelSyncSeconds, c.LabelStatusSeconds, c.WorkloadSeconds)
		phase("cold", c.Phase)
	}
	if l := r.Latency; l != nil {
		if e := l.Cloud; e != nil {
			fmt.Fprintf(w, "Latency: node sync %v; metadata %v; reads per edit %.2f\n", e.Node.Seconds, e.Metadata.Seconds, e.ReadsPerEdit)
		}
		fmt.Fprintf(w, "Latency: label sync host change %s, Node edit reverted %s\n", l.HostChange, l.NodeRevert)
		phase("latency", l.Phase)
	}
	if rs := r.Resync; rs != nil {
		phase("node sync full pass", rs.NodeSync.Phase)
		phase("metadata full pass", rs.Metadata.Phase)
	}
	if m := r.Memory; m != nil {
		fmt.Fprintln(w, "Memory of tagsync run:")
		benchkit.PrintSamples(w, 34, m.Samples)
	}
}
