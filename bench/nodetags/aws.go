package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/testenv"
)

// AWSResult is the node sync on AWS (moto). Scenario aws: a cold sync of
// Auto Scaling groups' nodes and instances in no group, then resyncs of the
// unchanged cluster; aws-memory: the same estate synced by `tagsync run` as
// its own process, its memory sampled; aws-fanout: a group tag edit on a
// fresh moto.
type AWSResult struct {
	Nodes      int           `json:"nodes"`
	Groups     int           `json:"autoScalingGroups"`
	PerGroup   int           `json:"nodesPerGroup"`
	Standalone int           `json:"standaloneInstances"`
	Cold       Phase         `json:"coldSync"`
	Resync     *ResyncResult `json:"resync,omitempty"`
	FanOut     *FanOutResult `json:"fanOut,omitempty"`
	Memory     *MemoryResult `json:"memory,omitempty"`
	// Throttle is scenario aws-throttle, Peer aws-peer (awslimits.go).
	Throttle *AWSThrottleResult `json:"throttle,omitempty"`
	Peer     *AWSPeerResult     `json:"peer,omitempty"`
}

// benchAccessKey is the access key the measured controller signs its AWS
// calls with: the fidelity layer in front of moto counts its calls apart
// from the harness's own (seeding, checks), which sign with
// testenv.MotoAccessKeyID. moto takes any key it did not issue for its one
// account, so both see the same resources; the layer keeps EC2's throttling
// buckets per key, so the harness's calls take no token of the
// controller's.
const benchAccessKey = "AKIATAGSYNCBENCH0001"

// motoCloud is moto behind the AWS fidelity layer (testenv.AWSRules) as
// the aws scenarios see it: the layer answers every call as AWS would
// (limits per call, EC2's throttling buckets) and counts it, so a phase's
// calls are the controller's calls the layer answered, throttled and
// refused ones included.
type motoCloud struct {
	rules *testenv.AWSRules
	base  map[testenv.AWSCall]int
}

// newMotoCloud counts the calls through m's layer from now on.
func newMotoCloud(m *testenv.Moto) *motoCloud {
	c := &motoCloud{rules: m.Rules}
	c.resetCalls()
	return c
}

// resetCalls starts counting afresh.
func (c *motoCloud) resetCalls() { c.base = c.rules.Calls() }

// stats are the controller's calls since resetCalls as the layer answered
// them: Describe*, Get* and List* are reads, the rest writes; Throttled
// counts the throttling answers (RequestLimitExceeded, Throttling*);
// Errors every error answer by operation and code. provider is what the
// provider counted, kept beside them.
func (c *motoCloud) stats(provider map[string]int) callStats {
	s := callStats{ARMTally: benchkit.ARMTally{ByOp: map[string]int{}}, Provider: provider, Errors: map[string]int{}}
	for call, n := range c.rules.Calls() {
		if n -= c.base[call]; n == 0 || call.AccessKey != benchAccessKey {
			continue
		}
		s.ByOp[call.Op] += n
		if call.Error != "" {
			s.Errors[call.Op+" "+call.Error] += n
		}
		if call.Error == "RequestLimitExceeded" || strings.HasPrefix(call.Error, "Throttling") {
			s.Throttled += n
		}
		if _, name, _ := strings.Cut(call.Op, ":"); strings.HasPrefix(name, "Describe") || strings.HasPrefix(name, "Get") || strings.HasPrefix(name, "List") {
			s.Reads += n
		} else {
			s.Writes += n
		}
	}
	return s
}

// awsLabelsFor maps tags to the labels a NodeTagSync on AWS writes.
func awsLabelsFor(tags map[string]string) map[string]string {
	out := make(map[string]string, len(tags))
	for k, v := range tags {
		out[awsLabelPrefix+k] = v
	}
	return out
}

// awsNodeSpecs are the Nodes of instances ids, named prefix-NNN, expected
// to carry tags as labels.
func awsNodeSpecs(prefix string, ids []string, tags map[string]string) []nodeSpec {
	nodes := make([]nodeSpec, 0, len(ids))
	for j, id := range ids {
		nodes = append(nodes, nodeSpec{name: fmt.Sprintf("%s-%03d", prefix, j), providerID: seed.ProviderID(testenv.MotoRegion, id),
			pool: prefix, expect: awsLabelsFor(tags)})
	}
	return nodes
}

// awsGroup creates an Auto Scaling group of n instances tagged with
// benchkit.PoolTags on moto and returns its Nodes.
func awsGroup(ctx context.Context, m *testenv.Moto, i, n int, name string) ([]nodeSpec, error) {
	tags := benchkit.PoolTags(i, name)
	_, ids, err := seed.CreateGroup(ctx, m.Config, testenv.MotoRegion, name, n, tags)
	return awsNodeSpecs(name, ids, tags), err
}

// awsEstate creates the aws scenario's groups and instances on moto and
// returns their Nodes.
func (b *bench) awsEstate(ctx context.Context, m *testenv.Moto) ([]nodeSpec, error) {
	start := time.Now()
	var nodes []nodeSpec
	for i := range b.o.awsGroups {
		g, err := awsGroup(ctx, m, i, b.o.awsPerGroup, fmt.Sprintf("pool%02d", i))
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, g...)
	}
	if b.o.awsSolo > 0 {
		ids, err := seed.CreateInstances(ctx, m.Config, testenv.MotoRegion, b.o.awsSolo, vmTags(0))
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, awsNodeSpecs("solo", ids, vmTags(0))...)
	}
	benchkit.Logf("aws: %d instances on moto in %s", len(nodes), time.Since(start).Round(time.Millisecond))
	return nodes, nil
}

// awsSync is an estate of nodes on moto synced by a NodeTagSync with
// provider aws (otherwise the defaults: TwoWay, groups as the target).
func (b *bench) awsSync(m *testenv.Moto, nodes []nodeSpec) estate {
	return estate{cloud: newMotoCloud(m), expect: expected(nodes), create: func(ctx context.Context) error {
		return b.createSync(ctx, func(s *v1alpha1.NodeTagSyncSpec) { s.Provider = v1alpha1.ProviderAWS })
	}}
}

// startAWS starts the controller in this process with the AWS provider on
// moto (through the fidelity layer, signing with benchAccessKey): its
// defaults, its own metrics registry.
func (b *bench) startAWS(ctx context.Context, m *testenv.Moto) (*inProcess, error) {
	set := &aws.Settings{Config: aws.Config{Region: testenv.MotoRegion, Endpoint: m.URL,
		AccessKeyID: benchAccessKey, SecretAccessKey: testenv.MotoSecretAccessKey}}
	if err := set.Complete(); err != nil {
		return nil, err
	}
	p, err := set.NewProvider(ctx, cloud.ProviderOptions{Registerer: prometheus.NewRegistry(), OwnGates: true})
	if err != nil {
		return nil, err
	}
	return b.startManager(ctx, p.(*aws.Provider))
}

// awsResult is the results' AWS part, made on first use.
func (b *bench) awsResult() *AWSResult {
	if b.res.AWS == nil {
		b.res.AWS = &AWSResult{}
	}
	return b.res.AWS
}

// awsNodes runs scenarios aws, aws-throttle and aws-memory on one moto
// estate of -aws-groups groups and -aws-instances instances in no group.
func (b *bench) awsNodes(ctx context.Context) error {
	m, err := testenv.NewMoto()
	if err != nil {
		return err
	}
	defer func() { _ = m.Stop() }()
	nodes, err := b.awsEstate(ctx, m)
	if err != nil {
		return err
	}
	res := b.awsResult()
	res.Nodes, res.Groups, res.PerGroup, res.Standalone = len(nodes), b.o.awsGroups, b.o.awsPerGroup, b.o.awsSolo
	if b.o.Has("aws") {
		if err := b.awsResync(ctx, m, nodes, res); err != nil {
			return fmt.Errorf("aws: %w", err)
		}
	}
	if b.o.Has("aws-throttle") {
		if res.Throttle, err = b.awsThrottle(ctx, m, nodes); err != nil {
			return fmt.Errorf("aws-throttle: %w", err)
		}
	}
	if b.o.Has("aws-memory") {
		if res.Memory, err = b.awsMemory(ctx, m, nodes); err != nil {
			return fmt.Errorf("aws-memory: %w", err)
		}
	}
	return nil
}

// awsResync runs scenario aws: the controller in this process, a cold
// sync, then -resyncs requested passes over the unchanged cluster. A
// resync's read budget is ceil(instances/1000) DescribeInstances plus
// ceil(groups/100) DescribeAutoScalingGroups (one region).
func (b *bench) awsResync(ctx context.Context, m *testenv.Moto, nodes []nodeSpec, res *AWSResult) error {
	ctl, err := startOn(ctx, b, nodes, func(ctx context.Context) (*inProcess, error) { return b.startAWS(ctx, m) })
	if err != nil {
		return err
	}
	defer stop(ctl)
	e := b.awsSync(m, nodes)
	if res.Cold, err = b.initialSync(ctx, "aws cold sync", e, ctl); err != nil {
		return err
	}
	benchkit.Logf("aws cold sync: %d nodes labelled in %.2fs; %s; %d node writes", res.Nodes, res.Cold.LabelsSeconds,
		benchkit.OpsLine(res.Cold.Calls.ByOp), res.Cold.NodeWrites)
	res.Resync = &ResyncResult{Nodes: len(nodes), ScaleSets: b.o.awsGroups, ResourceGroups: 1,
		ReadBudget: ceilDiv(len(nodes), aws.MaxFilterValues) + ceilDiv(b.o.awsGroups, aws.GroupsPerRead), PassesPerHour: 12,
		NaiveReadsPerPass: len(nodes), NaiveReadsPerHour: 12 * len(nodes)}
	return b.resyncs(ctx, "aws resync", e.cloud, ctl, res.Resync)
}

// awsMemory runs scenario aws-memory as the memory scenario runs on Azure:
// `tagsync run` as its own process (AWS flags pointing at moto), sampled
// idle, converged and after a fresh resync and 10 s idle.
func (b *bench) awsMemory(ctx context.Context, m *testenv.Moto, nodes []nodeSpec) (*MemoryResult, error) {
	dir, err := b.scenarioDir("aws-memory")
	if err != nil {
		return nil, err
	}
	flags, err := benchkit.AWSFlags(m, dir)
	if err != nil {
		return nil, err
	}
	for i := range flags[:len(flags)-1] {
		if flags[i] == "--aws-access-key-id" {
			flags[i+1] = benchAccessKey
		}
	}
	sep, err := startOn(ctx, b, nodes, func(ctx context.Context) (separate, error) { return b.startRun(ctx, dir, flags) })
	if err != nil {
		return nil, err
	}
	defer stop(sep)
	res := &MemoryResult{Variant: "aws-" + variantTagsyncRun, Nodes: len(nodes), ScaleSets: b.o.awsGroups, NodeObjectBytes: b.nodeSize(nodes[0]),
		NodeShape: b.o.nodeShape(), GoalMiB: 150, Mode: "separate process: tagsync run", Command: sep.Command}
	return res, b.memoryPhases(ctx, "aws", b.awsSync(m, nodes), sep, res, sep.sampler(res))
}

// awsFanOut runs scenario aws-fanout: a fresh moto with one group of
// -fanout-nodes instances; after the initial sync an outside
// CreateOrUpdateTags on the group, then a sync request.
func (b *bench) awsFanOut(ctx context.Context) (*FanOutResult, error) {
	m, err := testenv.NewMoto()
	if err != nil {
		return nil, err
	}
	defer func() { _ = m.Stop() }()
	nodes, err := awsGroup(ctx, m, 0, b.o.fanOutNodes, "bigpool")
	if err != nil {
		return nil, err
	}
	ctl, err := startOn(ctx, b, nodes, func(ctx context.Context) (*inProcess, error) { return b.startAWS(ctx, m) })
	if err != nil {
		return nil, err
	}
	defer stop(ctl)
	return b.fanOutEdit(ctx, b.awsSync(m, nodes), ctl, nodes, awsLabelsFor, func(ctx context.Context, edit map[string]string) error {
		return seed.UpdateGroupTags(ctx, m.Config, testenv.MotoRegion, "bigpool", edit)
	})
}

// startOn empties the cluster, creates nodes, then starts a controller.
func startOn[C controller](ctx context.Context, b *bench, nodes []nodeSpec, start func(context.Context) (C, error)) (C, error) {
	if err := b.freshNodes(ctx, nodes); err != nil {
		var none C
		return none, err
	}
	return start(ctx)
}

// ceilDiv is a/b rounded up.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// awsGoals are the AWS scenarios' verdicts.
func awsGoals(a *AWSResult) []benchkit.Goal {
	var g []benchkit.Goal
	if s := a.Resync; s != nil {
		ran := len(s.Runs) > 0
		g = append(g,
			benchkit.Goal{Goal: fmt.Sprintf("5. AWS resync, %d nodes in %d groups + %d instances: reads per pass", a.Nodes-a.Standalone, a.Groups, a.Standalone),
				Target:   fmt.Sprintf("<= ceil(instances/200) + ceil(groups/100) (<= %d)", s.ReadBudget),
				Measured: fmt.Sprint(s.Reads), Met: ran && s.Reads <= s.ReadBudget},
			benchkit.Goal{Goal: "5. AWS resync: cloud writes per pass", Target: "0", Measured: fmt.Sprint(s.Writes), Met: ran && s.Writes == 0},
			benchkit.Goal{Goal: "5. AWS resync: Node writes per pass", Target: "0", Measured: fmt.Sprint(s.NodeWrites), Met: ran && s.NodeWrites == 0})
	}
	if f := a.FanOut; f != nil {
		g = append(g, fanOutGoal("5. AWS group tag edit fan-out", f))
	}
	if m := a.Memory; m != nil {
		g = append(g, memoryGoal("5. AWS controller memory", m))
	}
	if t := a.Throttle; t != nil {
		g = append(g, throttleGoals(t)...)
	}
	if p := a.Peer; p != nil {
		g = append(g, peerGoals(p)...)
	}
	return g
}

// printAWS prints the AWS scenarios' details.
func printAWS(w io.Writer, a *AWSResult) {
	if a.Cold.LabelsSeconds > 0 {
		fmt.Fprintf(w, "AWS cold sync: labels %.2fs; %s; %d Node writes\n", a.Cold.LabelsSeconds, benchkit.OpsLine(a.Cold.Calls.ByOp), a.Cold.NodeWrites)
	}
	if s := a.Resync; s != nil && len(s.Runs) > 0 {
		fmt.Fprintf(w, "AWS resync (%d runs): pass %.3fs median; reads %d/pass (%s)\n",
			len(s.Runs), s.PassSecondsMedian, s.Reads, benchkit.OpsLine(s.Runs[0].Calls.ByOp))
	}
	if f := a.FanOut; f != nil {
		printFanOut(w, "AWS fan-out", f)
	}
	if m := a.Memory; m != nil {
		printMemory(w, m)
	}
	printLimits(w, a)
}
