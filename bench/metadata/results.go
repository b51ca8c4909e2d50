package main

import (
	"fmt"
	"io"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/cloud/azure"
)

// Results is everything one run measured; it is written as JSON.
type Results struct {
	benchkit.Header
	Initial *InitialResult `json:"initial,omitempty"`
	Steady  *SteadyResult  `json:"steady,omitempty"`
	AWS     *AWSResult     `json:"aws,omitempty"`
	Apply   *ApplyResult   `json:"apply,omitempty"`
	Memory  *MemoryResult  `json:"memory,omitempty"`
}

// ARMCalls is what armsim served in a phase, identity requests counted
// apart from reads and writes.
type ARMCalls = benchkit.ARMTally

// InitialResult is the first pass of each CloudMetadata over an estate
// already carrying the request (not a goal).
type InitialResult struct {
	AzureSeconds float64        `json:"azureSeconds,omitempty"`
	AzureARM     ARMCalls       `json:"azureARM"`
	AWSSeconds   float64        `json:"awsSeconds,omitempty"`
	AWSCalls     map[string]int `json:"awsCalls,omitempty"`
}

// SteadyRun is one unchanged resync of the Azure estate.
type SteadyRun struct {
	WallSeconds float64  `json:"wallSeconds"`
	PassSeconds float64  `json:"passSeconds"`
	ARM         ARMCalls `json:"arm"`
}

// AWSSteady is one unchanged resync of the EC2 instances.
type AWSSteady struct {
	WallSeconds float64        `json:"wallSeconds"`
	Calls       map[string]int `json:"calls"`
}

// SteadyResult is goal A (worst case over the runs).
type SteadyResult struct {
	Resources       int         `json:"resources"`
	Subscriptions   int         `json:"subscriptions"`
	DiscoveryBudget int         `json:"discoveryBudget"`
	Runs            []SteadyRun `json:"runs"`
	Discovery       int         `json:"discoveryCalls"`
	OtherReads      int         `json:"otherReads"`
	Writes          int         `json:"writes"`
	AWSRun          *AWSSteady  `json:"awsResync,omitempty"`
	Met             bool        `json:"met"`
}

// AWSResult is goal C.
type AWSResult struct {
	Resources   int            `json:"resources"`
	WriteBudget int            `json:"writeBudget"`
	Seconds     float64        `json:"seconds"`
	Calls       map[string]int `json:"calls"`
	Writes      int            `json:"writeCalls"`
	Tagged      int            `json:"taggedInMoto"`
	Met         bool           `json:"met"`
}

// SubWrites is one subscription's share of the Azure apply.
type SubWrites struct {
	Subscription string  `json:"subscription"`
	Writes       int     `json:"writes"`
	FirstSeconds float64 `json:"firstAfterSeconds"`
	LastSeconds  float64 `json:"lastAfterSeconds"`
}

// ApplyProgress is the number of writes done at a moment.
type ApplyProgress struct {
	AfterSeconds float64 `json:"afterSeconds"`
	Writes       int     `json:"writes"`
	Throttled    int     `json:"throttled429"`
}

// ApplyResult is goal B.
type ApplyResult struct {
	Resources       int     `json:"resources"`
	Subscriptions   int     `json:"subscriptions"`
	PerSubscription int     `json:"perSubscription"`
	WriteQPSFlag    float64 `json:"azureWriteQPSFlag"`
	// QuotaSeconds is the time the write limits allow, subscriptions in
	// parallel: the longer of ARM's write bucket, max(0, N-200)/10, and
	// Network's, max(0, M-1000)/(1000/300) for the M network resources of
	// a subscription.
	QuotaSeconds float64 `json:"quotaSeconds"`
	// NetworkPerSubscription is M.
	NetworkPerSubscription int     `json:"networkPerSubscription"`
	GoalSeconds            float64 `json:"goalSeconds"`
	// Seconds is from the spec change to armsim's last tag write.
	Seconds        float64        `json:"seconds,omitempty"`
	StatusSeconds  float64        `json:"statusSeconds,omitempty"`
	Writes         int            `json:"writes"`
	Throttled      int            `json:"throttled429"`
	WriteOps       map[string]int `json:"writeOperations"`
	BySubscription []SubWrites    `json:"bySubscription"`
	// Incomplete: the harness stopped waiting (-apply-wait); then
	// RatePerSecond is the write rate over the last half of the wait and
	// ExtrapolatedSeconds the completion time at that rate.
	Incomplete          bool            `json:"incomplete,omitempty"`
	RatePerSecond       float64         `json:"ratePerSecond,omitempty"`
	ExtrapolatedSeconds float64         `json:"extrapolatedSeconds,omitempty"`
	Progress            []ApplyProgress `json:"progress"`
	Met                 bool            `json:"met"`
}

// MemoryResult is goal D.
type MemoryResult struct {
	benchkit.Memory
	AzureResources int    `json:"azureResources"`
	AWSResources   int    `json:"awsResources"`
	AuditLog       string `json:"auditLog,omitempty"`
}

func (o options) settings() map[string]any {
	wq := "provider default"
	if o.writeQPS > 0 {
		wq = fmt.Sprint(o.writeQPS)
	}
	return map[string]any{
		"scenarios": o.Scenarios, "resyncs": o.resyncs, "applyWait": o.applyWait.String(), "auditLog": o.auditLog,
		"azure":         fmt.Sprintf("%d subscriptions x (10 types x %d + 1 resource group)", o.subs, o.perType),
		"aws":           fmt.Sprintf("%d EC2 instances in moto", o.awsResources),
		"azureWriteQPS": wq,
		"azureProvider": fmt.Sprintf("defaults: reads %d/s burst %d, writes %d/s burst %d per subscription, %d resources written at once, write method TagsAPI",
			azure.DefaultReadsPerSecond, azure.DefaultReadBurst, azure.DefaultWritesPerSecond, azure.DefaultWriteBurst, azure.DefaultWriteConcurrency),
		"armsim": fmt.Sprintf("HTTPS, ARM throttling (reads 250 + 25/s, writes %d + %d/s per subscription, Resource Graph 15 per 5 s), Network's own (writes %d per 5 minutes per subscription), Compute's own, Retry-After in whole seconds, Resource Graph pages of 1000",
			armWriteCapacity, armWriteRefill, networkWriteCapacity),
	}
}

// Results are what the scenarios measured.
func (b *bench) Results() benchkit.Results { return b.res }

// Goals renders the verdicts.
func (b *bench) Goals() []benchkit.Goal {
	r, o := b.res, b.o
	var g []benchkit.Goal
	if s := r.Steady; s != nil && len(s.Runs) > 0 {
		g = append(g,
			benchkit.Goal{Goal: fmt.Sprintf("A. steady resync, %d Azure resources in %d subscriptions: discovery calls", s.Resources, s.Subscriptions),
				Target: fmt.Sprintf("<= 1 per 1000 resources (%d)", s.DiscoveryBudget), Measured: fmt.Sprint(s.Discovery), Met: s.Discovery <= s.DiscoveryBudget},
			benchkit.Goal{Goal: "A. steady resync: ARM writes", Target: "0", Measured: fmt.Sprint(s.Writes), Met: s.Writes == 0})
	}
	if a := r.Apply; a != nil {
		measured := fmt.Sprintf("%.1f s, %d x 429", a.Seconds, a.Throttled)
		if a.Incomplete {
			measured = fmt.Sprintf("%d of %d writes in %s; extrapolated %.0f s; %d x 429", a.Writes, a.Resources, o.applyWait, a.ExtrapolatedSeconds, a.Throttled)
		}
		if a.WriteQPSFlag > 0 {
			measured += fmt.Sprintf(" (--azure-write-qps %g)", a.WriteQPSFlag)
		}
		g = append(g, benchkit.Goal{Goal: fmt.Sprintf("B. add one tag to %d Azure resources (%d per subscription, %d of them Network's)", a.Resources, a.PerSubscription, a.NetworkPerSubscription),
			Target: fmt.Sprintf("<= 1.1 x %.1f s = %.1f s, 0 x 429", a.QuotaSeconds, a.GoalSeconds), Measured: measured, Met: a.Met})
	}
	if a := r.AWS; a != nil {
		g = append(g, benchkit.Goal{Goal: fmt.Sprintf("C. add one tag to %d EC2 instances: write calls", a.Resources),
			Target: fmt.Sprintf("<= %d", a.WriteBudget), Measured: fmt.Sprintf("%d (%.1f s)", a.Writes, a.Seconds), Met: a.Met})
	}
	if m := r.Memory; m != nil && o.Has("memory") {
		g = append(g, benchkit.Goal{Goal: fmt.Sprintf("D. controller RSS (%d Azure + %d AWS resources; scenarios %s)", m.AzureResources, m.AWSResources, m.Scenarios),
			Target: "<= 200 MiB", Measured: fmt.Sprintf("peak %.0f MiB, settled %.0f MiB", m.PeakRSSMiB, m.RSSMiB), Met: m.Met})
	}
	return g
}

// Report prints the phases' details.
func (b *bench) Report(w io.Writer) {
	r := b.res
	if i := r.Initial; i != nil {
		fmt.Fprintf(w, "Initial passes (already in sync): Azure %.1fs, ARM %s; AWS %.1fs, calls %s\n",
			i.AzureSeconds, benchkit.OpsLine(i.AzureARM.ByOp), i.AWSSeconds, benchkit.OpsLine(i.AWSCalls))
	}
	if s := r.Steady; s != nil {
		for k, run := range s.Runs {
			fmt.Fprintf(w, "Steady resync %d: %.2fs from request to status (pass %.2fs); ARM %s\n", k+1, run.WallSeconds, run.PassSeconds, benchkit.OpsLine(run.ARM.ByOp))
		}
		if s.AWSRun != nil {
			fmt.Fprintf(w, "AWS steady resync: %.2fs; calls %s\n", s.AWSRun.WallSeconds, benchkit.OpsLine(s.AWSRun.Calls))
		}
	}
	if a := r.AWS; a != nil {
		fmt.Fprintf(w, "AWS add: %d/%d tagged in %.1fs; calls %s\n", a.Tagged, a.Resources, a.Seconds, benchkit.OpsLine(a.Calls))
	}
	if a := r.Apply; a != nil {
		fmt.Fprintf(w, "Azure add: %d writes (%s), %d x 429; quota-allowed %.1fs per subscription in parallel\n", a.Writes, benchkit.OpsLine(a.WriteOps), a.Throttled, a.QuotaSeconds)
		for _, s := range a.BySubscription {
			fmt.Fprintf(w, "  subscription %s: %d writes from %.1fs to %.1fs after the change\n", s.Subscription, s.Writes, s.FirstSeconds, s.LastSeconds)
		}
		if a.Incomplete {
			fmt.Fprintf(w, "  INCOMPLETE: stopped waiting; %.2f writes/s over the last half; EXTRAPOLATED completion %.0fs\n", a.RatePerSecond, a.ExtrapolatedSeconds)
		} else {
			fmt.Fprintf(w, "  last write %.1fs after the change; status %.1fs\n", a.Seconds, a.StatusSeconds)
		}
	}
	if m := r.Memory; m != nil {
		fmt.Fprintf(w, "Memory of tagsync run (%d Azure + %d AWS resources):\n", m.AzureResources, m.AWSResources)
		benchkit.PrintSamples(w, 50, m.Samples)
	}
}
