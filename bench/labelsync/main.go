// Command labelsync benchmarks the labelsync controller (BareMetalHost
// labels kept on workload-cluster Nodes) against the goals in
// docs/performance.md:
//
//	A. a BareMetalHost label change reaches its Node     ≤ 1 s (median and p99 over 100)
//	B. a Node-side edit of an in-scope label is reverted ≤ 1 s (median and p99 over 100)
//	C. a steady resync writes nothing (Nodes, hosts, Cluster API objects)
//	D. controller RSS ≤ 150 MiB
//
// Everything is real: a management control plane (Cluster API and minimal
// Metal3 CRDs) and 10 workload control planes, each a kube-apiserver and
// etcd (internal/testenv); 1,000 BareMetalHosts (100 per workload cluster),
// each with its Metal3Machine, Machine (status.nodeRef) and Node; a Cluster,
// Metal3Cluster and <cluster>-kubeconfig Secret per workload cluster; and
// `tagsync run --controllers=labelsync` as its own process. Latencies are
// taken from the harness's own watches of the Nodes in each workload
// cluster; writes are counted from the resourceVersions those watches (and
// watches of the management objects) see.
//
// Run it from the repository root (about 6 minutes):
//
//	go run ./bench/labelsync
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
	clusters      int
	hostsPer      int
	changes       int
	reverts       int
	resync        time.Duration
	steadyResyncs int
	nodeImages    int
	startAtOnce   int
	heapProfile   string
	memoryLimit   string
}

func parseFlags() options {
	var o options
	o.Register("labelsync", "change,revert,steady,memory", "comma-separated scenarios after the initial sync: change (A), revert (B), steady (C), memory (D: RSS of the one controller process over the others)", 10*time.Minute)
	flag.IntVar(&o.clusters, "clusters", 10, "workload clusters (one control plane each)")
	flag.IntVar(&o.hostsPer, "hosts-per-cluster", 100, "BareMetalHosts (and Nodes) per workload cluster")
	flag.IntVar(&o.changes, "changes", 100, "A: host label changes, one after the other (each waited for at most 30 s)")
	flag.IntVar(&o.reverts, "reverts", 100, "B: Node label edits, one after the other (each waited for at most 30 s)")
	flag.DurationVar(&o.resync, "resync", 30*time.Second, "the profile's resyncInterval (C waits for -steady-resyncs periodic passes)")
	flag.IntVar(&o.steadyResyncs, "steady-resyncs", 2, "C: periodic resyncs to measure")
	flag.IntVar(&o.nodeImages, "node-images", 20, "container images in each Node's status (its size on the wire)")
	flag.IntVar(&o.startAtOnce, "start-at-once", 3, "control planes started at once")
	flag.StringVar(&o.heapProfile, "heap-profile", "", "run tagsync with --pprof-bind-address and write its heap profile, taken when memory has settled, to this file")
	flag.StringVar(&o.memoryLimit, "memory-limit", "", "pass `tagsync run --memory-limit` (the Helm chart's goMemoryLimit is 100Mi; empty: none, the runtime's default)")
	flag.Parse()
	return o
}

func main() {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	o := parseFlags()
	benchkit.Main(o.Out, &bench{o: o, res: &Results{Header: benchkit.NewHeader("LabelSync", o.settings())}})
}
