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
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// options are the command-line flags.
type options struct {
	scenarios    string
	out          string
	tagsyncBin   string
	timeout      time.Duration
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
	flag.StringVar(&o.scenarios, "scenarios", "steady,apply,aws,memory", "comma-separated scenarios: steady (A), apply (B), aws (C), memory (D: RSS of the one controller process over the others)")
	flag.StringVar(&o.out, "out", "bench/results/metadata.json", "where to write the JSON results (empty: do not write)")
	flag.StringVar(&o.tagsyncBin, "tagsync", "", "tagsync binary to measure (default: go build ./cmd/tagsync into a temporary directory)")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up on any single wait after this long")
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

// has reports whether -scenarios names s.
func (o options) has(s string) bool { return benchkit.Has(o.scenarios, s) }

// azure reports whether a scenario needs the Azure estate.
func (o options) azure() bool { return o.has("steady") || o.has("apply") || o.has("memory") }

// aws reports whether a scenario needs the EC2 resources.
func (o options) aws() bool { return o.has("aws") || o.has("memory") }

func main() {
	benchkit.Main(func(ctx context.Context) error { return run(ctx, parseFlags()) })
}

func run(ctx context.Context, o options) error {
	if o.auditLog != "none" && o.auditLog != "stderr" && o.auditLog != "file" {
		return fmt.Errorf("-audit-log %q: want none, stderr or file", o.auditLog)
	}
	res := &Results{Header: benchkit.NewHeader(o.settings())}

	b, err := newBench(ctx, o)
	if b != nil {
		defer b.close()
	}
	if err != nil {
		return err
	}
	res.Commit = benchkit.Commit(b.env.RootDir)
	runErr := b.scenarios(ctx, res)
	res.Finish(res.goals(o))
	printReport(os.Stdout, res)
	return benchkit.Save(o.out, res, runErr)
}
