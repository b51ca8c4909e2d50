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
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/testenv"
)

// AWSResult is the aws scenario: the node sync on AWS (moto), a cold sync
// of Auto Scaling groups' nodes and instances in no group, then resyncs of
// the unchanged cluster.
type AWSResult struct {
	Nodes      int           `json:"nodes"`
	Groups     int           `json:"autoScalingGroups"`
	PerGroup   int           `json:"nodesPerGroup"`
	Standalone int           `json:"standaloneInstances"`
	Cold       Phase         `json:"coldSync"`
	Resync     *ResyncResult `json:"resync,omitempty"`
}

// motoCloud is moto as the aws scenario sees it: moto keeps no request log
// the harness reads, so what the provider counted is the measurement.
type motoCloud struct{}

// resetCalls does nothing: the provider's counts are diffed instead.
func (motoCloud) resetCalls() {}

// stats classifies the provider's counts: Describe*, Get* and List* are
// reads, the rest writes.
func (motoCloud) stats(provider map[string]int) callStats {
	s := callStats{ByOp: provider, Provider: provider}
	for op, n := range provider {
		_, name, _ := strings.Cut(op, ":")
		if strings.HasPrefix(name, "Describe") || strings.HasPrefix(name, "Get") || strings.HasPrefix(name, "List") {
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

// awsEstate creates the aws scenario's groups and instances on moto and
// returns their Nodes.
func (b *bench) awsEstate(ctx context.Context, m *testenv.Moto) ([]nodeSpec, error) {
	region := testenv.MotoRegion
	var nodes []nodeSpec
	add := func(prefix string, ids []string, tags map[string]string) {
		for j, id := range ids {
			nodes = append(nodes, nodeSpec{name: fmt.Sprintf("%s-%03d", prefix, j), providerID: seed.ProviderID(region, id),
				pool: prefix, expect: awsLabelsFor(tags)})
		}
	}
	for i := range b.o.awsGroups {
		name := fmt.Sprintf("pool%02d", i)
		tags := poolTags(i, name)
		_, ids, err := seed.CreateGroup(ctx, m.Config, region, name, b.o.awsPerGroup, tags)
		if err != nil {
			return nil, err
		}
		add(name, ids, tags)
	}
	if b.o.awsSolo > 0 {
		ids, err := seed.CreateInstances(ctx, m.Config, region, b.o.awsSolo, vmTags(0))
		if err != nil {
			return nil, err
		}
		add("solo", ids, vmTags(0))
	}
	return nodes, nil
}

// awsNodes runs the aws scenario: moto, the AWS provider with its defaults
// (its own metrics registry), the controller in this process, a cold sync,
// then -resyncs requested passes over the unchanged cluster. A resync's
// read budget is ceil(instances/1000) DescribeInstances plus
// ceil(groups/100) DescribeAutoScalingGroups (one region).
func (b *bench) awsNodes(ctx context.Context) (*AWSResult, error) {
	m, err := testenv.NewMoto()
	if err != nil {
		return nil, err
	}
	defer func() { _ = m.Stop() }()
	start := time.Now()
	nodes, err := b.awsEstate(ctx, m)
	if err != nil {
		return nil, err
	}
	benchkit.Logf("aws: %d instances on moto in %s", len(nodes), time.Since(start).Round(time.Millisecond))
	if err := b.reset(ctx); err != nil {
		return nil, err
	}
	if err := b.createNodes(ctx, nodes); err != nil {
		return nil, err
	}
	p, err := aws.NewProvider(ctx, aws.Config{Region: testenv.MotoRegion, Endpoint: m.URL,
		AccessKeyID: testenv.MotoAccessKeyID, SecretAccessKey: testenv.MotoSecretAccessKey},
		aws.WithRegisterer(prometheus.NewRegistry()), aws.WithThrottleGates(aws.NewThrottleGates()))
	if err != nil {
		return nil, err
	}
	ctl, err := b.startManager(ctx, p)
	if err != nil {
		return nil, err
	}
	defer stop(ctl)
	res := &AWSResult{Nodes: len(nodes), Groups: b.o.awsGroups, PerGroup: b.o.awsPerGroup, Standalone: b.o.awsSolo}
	expect := map[string]map[string]string{}
	for _, n := range nodes {
		expect[n.name] = n.expect
	}
	onAWS := func(ctx context.Context) error {
		return b.createSync(ctx, func(s *v1alpha1.NodeTagSyncSpec) { s.Provider = v1alpha1.ProviderAWS })
	}
	if res.Cold, err = b.phase(ctx, "aws cold sync", motoCloud{}, ctl, expect, time.Time{}, onAWS); err != nil {
		return res, err
	}
	benchkit.Logf("aws cold sync: %d nodes labelled in %.2fs; %s; %d node writes", res.Nodes, res.Cold.LabelsSeconds,
		benchkit.OpsLine(res.Cold.Calls.ByOp), res.Cold.NodeWrites)
	res.Resync = &ResyncResult{Nodes: len(nodes), ScaleSets: b.o.awsGroups, ResourceGroups: 1,
		ReadBudget: ceilDiv(len(nodes), aws.MaxIDsPerCall) + ceilDiv(b.o.awsGroups, aws.GroupsPerRead), PassesPerHour: 12,
		NaiveReadsPerPass: len(nodes), NaiveReadsPerHour: 12 * len(nodes)}
	for i := range b.o.resyncs {
		r, err := b.resyncOnce(ctx, motoCloud{}, ctl)
		if err != nil {
			return res, fmt.Errorf("aws resync %d: %w", i+1, err)
		}
		res.Resync.Runs = append(res.Resync.Runs, r)
		benchkit.Logf("aws resync %d: pass %.3fs; %d reads (%s), %d writes; %d node writes", i+1, r.PassSeconds,
			r.Calls.Reads, benchkit.OpsLine(r.Calls.ByOp), r.Calls.Writes, r.NodeWrites)
	}
	res.Resync.summarize()
	return res, nil
}

// ceilDiv is a/b rounded up.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// awsGoals are the aws scenario's verdicts.
func awsGoals(a *AWSResult) []benchkit.Goal {
	s := a.Resync
	if s == nil {
		return nil
	}
	ran := len(s.Runs) > 0
	return []benchkit.Goal{
		{Goal: fmt.Sprintf("5. AWS resync, %d nodes in %d groups + %d instances: reads per pass", a.Nodes-a.Standalone, a.Groups, a.Standalone),
			Target:   fmt.Sprintf("<= ceil(instances/1000) + ceil(groups/100) (<= %d)", s.ReadBudget),
			Measured: fmt.Sprint(s.Reads), Met: ran && s.Reads <= s.ReadBudget},
		{Goal: "5. AWS resync: cloud writes per pass", Target: "0", Measured: fmt.Sprint(s.Writes), Met: ran && s.Writes == 0},
		{Goal: "5. AWS resync: Node writes per pass", Target: "0", Measured: fmt.Sprint(s.NodeWrites), Met: ran && s.NodeWrites == 0},
	}
}

// printAWS prints the aws scenario's details.
func printAWS(w io.Writer, a *AWSResult) {
	fmt.Fprintf(w, "AWS cold sync: labels %.2fs; %s; %d Node writes\n", a.Cold.LabelsSeconds, benchkit.OpsLine(a.Cold.Calls.ByOp), a.Cold.NodeWrites)
	if s := a.Resync; s != nil && len(s.Runs) > 0 {
		fmt.Fprintf(w, "AWS resync (%d runs): pass %.3fs median; reads %d/pass (%s)\n",
			len(s.Runs), s.PassSecondsMedian, s.Reads, benchkit.OpsLine(s.Runs[0].Calls.ByOp))
	}
}
