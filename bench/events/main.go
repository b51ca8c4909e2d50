// Command events benchmarks cloud change events (Azure Event Grid into
// `tagsync run`'s webhook) against the goals in docs/performance.md:
//
//  1. latency of a portal edit to the Node labels (node sync) and of an
//     outside edit of an owned tag to its revert (metadata), p50 and p99,
//     with events on versus polling every minute
//  2. ARM reads in steady state with events on, and per changed resource
//  3. a load of Event Grid deliveries (10,000 events a minute) into the
//     webhook: bounded memory and queue, overflow as full passes, no lost
//     work
//  4. a silent outage (the event subscriptions deleted, the webhook up):
//     the time to notice it and fall back to polling, and to recover
//
// and goal 1 again with the chart's shape (ha): two replicas with leader
// election behind one round-robin address, Event Grid retrying on its real
// schedule, while a leader serves and across a leader kill.
//
// The estate is the node-sync benchmark's layout (10 Uniform scale sets ×
// 100 instances + 50 VMs, one Node each) and the metadata benchmark's
// (10,000 classified resources in 5 subscriptions), both in armsim over
// HTTPS with ARM's throttling; armsim delivers an Event Grid event for
// every write, out-of-band edits included. `tagsync run
// --controllers=nodetags,metadata` runs as its own process, once with the
// webhook on and once polling.
//
// Run it from the repository root:
//
//	go run ./bench/events
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
	scaleSets, perSet, vms int
	subs, perType          int
	edits                  int
	spacing                time.Duration
	poll                   time.Duration
	window                 time.Duration
	loadRate               int
	loadFor                time.Duration
	queueSize              int
	skipOwn                bool
	silentAfter            time.Duration
	indexDelay             time.Duration
}

func parseFlags() options {
	var o options
	o.Register("events", "events,steady,lag,silent,load,polling,ha", "comma-separated scenarios: events (1, events on), steady (2), lag (5), silent (4), load (3), polling (1, events off), "+
		"ha (1 with two replicas behind one address, and across a leader kill)", 10*time.Minute)
	for _, f := range []struct {
		p     *int
		name  string
		value int
		usage string
	}{
		{&o.scaleSets, "scale-sets", 10, "node sync: Uniform scale sets"},
		{&o.perSet, "nodes-per-set", 100, "node sync: instances (Nodes) per scale set"},
		{&o.vms, "vms", 50, "node sync: standalone VMs (one Node each)"},
		{&o.subs, "subscriptions", 5, "metadata: subscriptions, one resource group each"},
		{&o.perType, "per-type", 200, "metadata: resources of each of the 10 cluster types per subscription (200: 10,000 in 5)"},
		{&o.edits, "edits", 20, "latency: edits of each kind (node sync, metadata) per mode"},
		{&o.loadRate, "load-rate", 10000, "load: Event Grid events per minute into the webhook"},
		{&o.queueSize, "queue-size", 10000, "`tagsync run --events-queue-size`"},
	} {
		flag.IntVar(f.p, f.name, f.value, f.usage)
	}
	flag.DurationVar(&o.spacing, "spacing", 3*time.Second, "latency: time between two edits of a kind (-edits × -spacing should cover -poll)")
	flag.DurationVar(&o.poll, "poll", time.Minute, "resyncInterval of the NodeTagSync and syncEvery of the CloudMetadata (events on: --events-resync-interval 1h polls them hourly)")
	flag.DurationVar(&o.window, "steady-window", 2*time.Minute, "steady: the quiet window whose ARM reads are counted")
	flag.DurationVar(&o.loadFor, "load-for", 5*time.Minute, "load: how long")
	flag.DurationVar(&o.indexDelay, "index-delay", 30*time.Second, "lag: how late Resource Graph shows a tag change (the tail of its indexing)")
	flag.DurationVar(&o.silentAfter, "silent-after", time.Minute, "`tagsync run --events-silent-after` (silent: the outage is noticed this long after the write whose echo does not come)")
	flag.BoolVar(&o.skipOwn, "skip-own-writes", false, "filter tagsync's own writes out of the event subscription (advanced filter StringNotIn on data.claims.appid)")
	flag.Parse()
	return o
}

func main() {
	o := parseFlags()
	benchkit.Main(o.Out, &bench{o: o, res: &Results{Header: benchkit.NewHeader("Events", o.settings())}})
}

// settings are the options as the results record them.
func (o options) settings() map[string]any {
	return map[string]any{
		"scenarios": o.Scenarios, "scaleSets": o.scaleSets, "nodesPerSet": o.perSet, "vms": o.vms,
		"subscriptions": o.subs, "perType": o.perType, "edits": o.edits, "spacing": o.spacing.String(),
		"poll": o.poll.String(), "steadyWindow": o.window.String(), "loadRatePerMinute": o.loadRate,
		"loadFor": o.loadFor.String(), "queueSize": o.queueSize, "skipOwnWrites": o.skipOwn, "silentAfter": o.silentAfter.String(), "indexDelay": o.indexDelay.String(),
	}
}
