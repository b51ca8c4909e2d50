// Command metadata benchmarks the metadata controller (CloudMetadata with
// AzureMetadata and AWSMetadata) against the cost goals in
// docs/performance.md:
//
//	A. steady resync of 10,000 classified Azure resources in 5 subscriptions:
//	   ≤ 1 discovery call per 1000 resources, 0 writes
//	B. one tag added to all of them: done within 1.1× the time ARM's write
//	   quota allows (bucket 200, refill 10/s per subscription), 0 × 429
//	C. one tag added to 10,000 AWS EC2 resources: ≤ 10 write calls
//	D. controller RSS ≤ 200 MiB with A/B and C served by one process
//
// Everything is real except the clouds: a kube-apiserver and etcd
// (internal/testenv), armsim over HTTPS with ARM's throttling, moto_server
// for EC2 and the Resource Groups Tagging API, and `tagsync run
// --controllers=metadata` as its own process with the flags a user would
// pass.
//
// Run it from the repository root:
//
//	go run ./bench/metadata
//
// It prints a table and writes the results as JSON (-out).
package main

import (
	"flag"
	"time"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// options are the command-line flags.
type options struct {
	benchkit.Flags
	resyncs      int
	subs         int
	perType      int
	awsResources int
	writeQPS     float64
	applyWait    time.Duration
	auditLog     string
}

func parseFlags() options {
	var o options
	o.Register("metadata", "steady,apply,aws,memory", "comma-separated scenarios: steady (A), apply (B), aws (C), memory (D: RSS of the one controller process over the others)", 15*time.Minute)
	flag.IntVar(&o.resyncs, "resyncs", 3, "steady: unchanged resync passes to measure")
	flag.IntVar(&o.subs, "subscriptions", 5, "Azure: subscriptions, one resource group each")
	flag.IntVar(&o.perType, "per-type", 200, "Azure: resources of each of the 10 cluster types per subscription (200: 2000 per subscription, 10,000 in 5)")
	flag.IntVar(&o.awsResources, "aws-resources", 10000, "AWS: EC2 instances in moto (RunInstances, at most 1000 a call)")
	flag.Float64Var(&o.writeQPS, "azure-write-qps", 0, "pass `tagsync run --azure-write-qps` (0: the provider's default budget)")
	flag.DurationVar(&o.applyWait, "apply-wait", 0, "apply: stop waiting for the writes after this long and extrapolate the completion time from the write rate (0: wait for every write)")
	flag.StringVar(&o.auditLog, "audit-log", "none", "`tagsync run --audit-log`: none, stderr (the controller's log file) or file (a file in the temporary directory)")
	flag.Parse()
	return o
}

// azure reports whether a scenario needs the Azure estate.
func (o options) azure() bool { return o.Has("steady") || o.Has("apply") || o.Has("memory") }

// aws reports whether a scenario needs the EC2 resources.
func (o options) aws() bool { return o.Has("aws") || o.Has("memory") }

func main() {
	o := parseFlags()
	benchkit.Main(o.Out, &bench{o: o, res: &Results{Header: benchkit.NewHeader("Metadata", o.settings())}})
}
