// Command sizing benchmarks one `tagsync run` serving all five controllers
// at once (node sync, metadata, the OpenShift adapter, label sync, workload
// tags) with
// cloud change events on, the process the Helm chart deploys, and checks
// it against the memory goal of docs/operations.md (≤ 200 MiB RSS) while
// every controller holds the latency and cost goals its own benchmark
// states in docs/performance.md:
//
//   - node sync: cold sync of every Node within 30 s, or 1.25 × what the
//     Kubernetes client budget allows ((Nodes − 200) / 100 s) when that is
//     more; a portal edit reaches the labels p99 ≤ 5 s; an unchanged resync
//     costs ≤ 1 ARM read per scale set or resource group, 0 writes
//   - metadata: an outside edit of an owned tag is reverted p99 ≤ 5 s; a
//     full pass costs ≤ 1 discovery call per 1000 resources, 0 writes
//   - label sync: a host label change reaches its Node, and a Node-side
//     edit is reverted, median and p99 ≤ 1 s
//   - workload tags (-volumes): a policy over that many PersistentVolumes
//     in 200 namespaces finds every disk in sync (volumes.go)
//
// The estate is the other benchmarks' at once (benchkit.Azure,
// benchkit.Metal): by default 10,000 AKS-like Nodes (100 Uniform scale sets
// × 100) and 20,000 classified resources (10 subscriptions) in armsim, and
// 1,000 BareMetalHosts in 10 workload clusters, each with its own control
// plane. The management cluster that holds the Nodes, the tag requests and
// the Metal3 objects is where `tagsync run` runs. The OpenShift adapter
// runs too; without OpenShift's Infrastructure CRD it waits for it (as on
// any cluster that is not OpenShift).
//
// The verdict is the exit status: 1 when a goal is missed (after the table
// and the results file).
//
// Run it from the repository root:
//
//	go run ./bench/sizing
//
// It prints a table and writes the results as JSON (-out).
package main

import (
	"flag"
	"os"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// options are the command-line flags.
type options struct {
	benchkit.Flags
	scaleSets, perSet  int
	subs, perType      int
	clusters, hostsPer int
	nodeImages         int
	edits              int
	spacing            time.Duration
	changes, reverts   int
	labelResync        time.Duration
	queueSize          int
	startAtOnce        int
	memoryLimit        string
	createWorkers      int
	memoryGoalMiB      float64
	volumes            int
	volumeNamespaces   int
}

func parseFlags() options {
	var o options
	o.Register("sizing", "cold,latency,resync,memory", "comma-separated scenarios after the start: cold (the first sync of every object), latency (cloud edits and label sync edits at once), resync (a requested full pass of the node sync and of the metadata), memory (RSS over all of them)", 20*time.Minute)
	for _, f := range []struct {
		p     *int
		name  string
		value int
		usage string
	}{
		{&o.scaleSets, "scale-sets", 100, "node sync: Uniform scale sets"},
		{&o.perSet, "nodes-per-set", 100, "node sync: instances (Nodes) per scale set"},
		{&o.subs, "subscriptions", 10, "metadata: subscriptions, one resource group each"},
		{&o.perType, "per-type", 200, "metadata: resources of each of the 10 cluster types per subscription (200: 20,000 in 10)"},
		{&o.clusters, "clusters", 10, "label sync: workload clusters (one control plane each)"},
		{&o.hostsPer, "hosts-per-cluster", 100, "label sync: BareMetalHosts (and Nodes) per workload cluster"},
		{&o.nodeImages, "node-images", 40, "container images in each AKS-like Node's status (the label sync's Nodes have 20)"},
		{&o.edits, "edits", 20, "latency: cloud edits of each kind (node sync, metadata)"},
		{&o.changes, "changes", 50, "latency: host label changes, one after the other"},
		{&o.reverts, "reverts", 50, "latency: Node label edits, one after the other"},
		{&o.queueSize, "queue-size", 10000, "`tagsync run --events-queue-size`"},
		{&o.startAtOnce, "start-at-once", 3, "control planes started at once"},
		{&o.createWorkers, "create-workers", 32, "parallel clients creating the AKS-like Nodes"},
		{&o.volumes, "volumes", 0, "workload tags: disks behind bound PersistentVolumes, already tagged (0: no WorkloadTagPolicy; docs/operations.md's row with PersistentVolumes: 10000 with -memory-limit 192Mi -memory-goal 300)"},
		{&o.volumeNamespaces, "volume-namespaces", 200, "workload tags: namespaces the claims are spread over"},
	} {
		flag.IntVar(f.p, f.name, f.value, f.usage)
	}
	flag.DurationVar(&o.spacing, "spacing", 3*time.Second, "latency: time between two cloud edits of a kind")
	flag.DurationVar(&o.labelResync, "label-resync", time.Minute, "the LabelSyncProfile's resyncInterval (the API's default: 1m)")
	flag.StringVar(&o.memoryLimit, "memory-limit", "", "pass `tagsync run --memory-limit` (the Helm chart passes its goMemoryLimit; empty: none, the runtime's default)")
	flag.Float64Var(&o.memoryGoalMiB, "memory-goal", 200, "the memory goal in MiB (VmHWM and settled VmRSS)")
	flag.Parse()
	return o
}

func main() {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	o := parseFlags()
	benchkit.Main(o.Out, &bench{o: o, res: &Results{Header: benchkit.NewHeader("Sizing", o.settings())}})
}

// settings are the options as the results record them.
func (o options) settings() map[string]any {
	return map[string]any{
		"scenarios": o.Scenarios, "scaleSets": o.scaleSets, "nodesPerSet": o.perSet, "nodes": o.scaleSets * o.perSet,
		"subscriptions": o.subs, "perType": o.perType, "classifiedResources": o.subs * o.perType * 10,
		"workloadClusters": o.clusters, "hostsPerCluster": o.hostsPer, "hosts": o.clusters * o.hostsPer,
		"nodeImages": o.nodeImages, "edits": o.edits, "spacing": o.spacing.String(), "changes": o.changes, "reverts": o.reverts,
		"labelResync": o.labelResync.String(), "queueSize": o.queueSize, "memoryLimit": o.memoryLimit, "memoryGoalMiB": o.memoryGoalMiB,
		"volumes": o.volumes, "volumeNamespaces": o.volumeNamespaces,
		"events": "on: --events-webhook-bind-address, --events-resync-interval 1h; armsim delivers every event",
	}
}

// FailsOnMissedGoals makes a run whose verdict misses a goal fail.
func (b *bench) FailsOnMissedGoals() bool { return true }
