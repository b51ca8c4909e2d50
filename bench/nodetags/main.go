// Command nodetags benchmarks the NodeTagSync controller against the cost and
// latency goals in docs/performance.md (see docs/architecture.md for the
// cost rules they check):
//
//  1. cold sync of 1000 scale-set nodes + 50 standalone VMs   ≤ 30 s
//  2. resync of an unchanged cluster: ≤ 1 ARM read per scale set or resource
//     group, 0 ARM writes, 0 Node writes
//  3. a portal edit on a 500-node scale set reaches every label  ≤ 10 s
//  4. controller RSS at 5000 nodes                               ≤ 150 MiB
//  5. (scenarios aws, aws-fanout, aws-memory, aws-throttle; opt-in) the node
//     sync on AWS (moto behind the fidelity layer, which answers as AWS
//     does and counts every call): a resync of an unchanged cluster costs
//     ≤ ceil(instances/200) + ceil(groups/100) reads, 0 cloud writes, 0 Node writes; a group tag
//     edit reaches a 500-node group's labels ≤ 10 s; `tagsync run` stays
//     ≤ 150 MiB; (aws-throttle) with EC2's buckets shrunk so that AWS
//     throttles, every node ends in sync with no failed pass
//  6. (aws-peer; opt-in) 100 instances NodeToCloud: the initial sync in
//     <= 1 read + 1 write per distinct patch, a one-label change in <= 2
//     EC2 calls, a 50-node change in <= 3
//
// Everything is real except Azure: a kube-apiserver and etcd (internal/testenv),
// armsim over HTTPS with ARM's throttling limits, the Azure provider with its
// production defaults, and the nodetags controller in a controller-runtime
// manager. Scenarios 1-3 run the controller in this process; scenario 4 runs
// `tagsync run` as a separate process so that its RSS is the controller's
// alone.
//
// Run it from the repository root (it takes a few minutes):
//
//	go run ./bench/nodetags
//
// It prints a table and writes the results as JSON (-out).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// options are the command-line flags.
type options struct {
	benchkit.Flags
	cpuProfile     string
	nodeImages     int
	nodeStatus     bool
	verbosity      int
	resyncs        int
	memoryMode     string
	memProfile     string
	memExperiments string

	coldScaleSets, coldPerSet, coldVMs int
	fanOutNodes                        int
	memGroups, memSets, memPerSet      int
	awsGroups, awsPerGroup, awsSolo    int
}

func parseFlags() options {
	var o options
	o.Register("nodetags", "cold,resync,fanout,memory", "comma-separated scenarios to run: cold, resync (needs cold), fanout, memory; on moto through the AWS fidelity layer: aws, aws-fanout, aws-memory, aws-throttle (EC2 buckets shrunk), aws-peer (k8s-node-tagger's estate)", 10*time.Minute)
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the in-process scenarios (cold, resync, fanout) to this file")
	flag.IntVar(&o.nodeImages, "node-images", 40, "container images listed in each Node's status (realistic Node size; 0 makes minimal Nodes)")
	flag.BoolVar(&o.nodeStatus, "node-status", true, "give Nodes a kubelet-like status (conditions, capacity, node info, -node-images images); false: labels, annotations and spec only")
	flag.IntVar(&o.verbosity, "v", 0, "controller log verbosity (0: errors only; 1: info; 2: the controller's pass logs)")
	flag.StringVar(&o.memoryMode, "memory-mode", "separate", "memory scenario: separate (tagsync run as its own process) or in-process (for -memprofile)")
	flag.StringVar(&o.memProfile, "memprofile", "", "with -memory-mode in-process: write a heap profile after convergence to this file")
	flag.StringVar(&o.memExperiments, "memory-experiments", "", "extra memory runs after the goal measurement, comma-separated: memory-limit (tagsync run --memory-limit "+experimentLimit+")")
	flag.IntVar(&o.resyncs, "resyncs", 3, "number of unchanged-cluster resync passes to measure")
	flag.IntVar(&o.coldScaleSets, "cold-scale-sets", 10, "cold sync: Uniform scale sets")
	flag.IntVar(&o.coldPerSet, "cold-nodes-per-set", 100, "cold sync: instances (Nodes) per scale set")
	flag.IntVar(&o.coldVMs, "cold-vms", 50, "cold sync: standalone VMs (Nodes)")
	flag.IntVar(&o.fanOutNodes, "fanout-nodes", 500, "fan-out: instances of the one scale set (aws-fanout: Auto Scaling group) whose tags are edited")
	flag.IntVar(&o.memGroups, "memory-groups", 5, "memory: resource groups")
	flag.IntVar(&o.memSets, "memory-scale-sets", 100, "memory: Uniform scale sets (spread over the groups)")
	flag.IntVar(&o.memPerSet, "memory-nodes-per-set", 100, "memory: instances (Nodes) per scale set")
	flag.IntVar(&o.awsGroups, "aws-groups", 10, "aws: Auto Scaling groups")
	flag.IntVar(&o.awsPerGroup, "aws-nodes-per-group", 100, "aws: instances (Nodes) per Auto Scaling group")
	flag.IntVar(&o.awsSolo, "aws-instances", 50, "aws: instances (Nodes) in no group")
	flag.Parse()
	return o
}

func main() {
	o := parseFlags()
	benchkit.Main(o.Out, &bench{o: o, res: &Results{Header: benchkit.NewHeader("NodeTagSync", o.settings())}})
}

// Scenarios runs the in-process scenarios (cold with resync, fanout,
// aws-fanout; under -cpuprofile), then memory with `tagsync run` as its own
// process, then aws (in-process) and aws-memory (`tagsync run`) on one moto
// estate.
func (b *bench) Scenarios(ctx context.Context) error {
	if err := b.inProcess(ctx); err != nil {
		return err
	}
	if b.o.Has("memory") {
		var err error
		if b.res.Memory, err = b.memory(ctx); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
	}
	if b.o.Has("aws") || b.o.Has("aws-memory") || b.o.Has("aws-throttle") {
		if err := b.awsNodes(ctx); err != nil {
			return err
		}
	}
	if b.o.Has("aws-peer") {
		var err error
		if b.awsResult().Peer, err = b.awsPeer(ctx); err != nil {
			return fmt.Errorf("aws-peer: %w", err)
		}
	}
	return nil
}

// FailsOnMissedGoals makes a run whose verdict misses a goal fail.
func (b *bench) FailsOnMissedGoals() bool { return true }

// inProcess runs the scenarios that run the controller in this process.
func (b *bench) inProcess(ctx context.Context) error {
	if b.o.cpuProfile != "" {
		f, err := os.Create(b.o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	res := b.res
	return b.o.RunSteps(ctx, []benchkit.Step{
		{Name: "cold", Run: func(ctx context.Context) (err error) {
			res.Cold, res.Resync, err = b.coldAndResync(ctx, b.o.Has("resync"))
			return err
		}},
		{Name: "fanout", Run: func(ctx context.Context) (err error) { res.FanOut, err = b.fanOut(ctx); return err }},
		{Name: "aws-fanout", Run: func(ctx context.Context) (err error) { b.awsResult().FanOut, err = b.awsFanOut(ctx); return err }},
	}, func(string) {})
}
