package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/testenv"
)

// Scenario aws-throttle: the aws estate synced with EC2's buckets shrunk
// in the fidelity layer, so that AWS's throttling (RequestLimitExceeded)
// really happens, and passes must survive it.

// throttleBuckets are the EC2 buckets aws-throttle gives the layer in place
// of AWS's (DescribeInstances 100 + 20/s, CreateTags 100 + 10/s): a pass
// over 1000 nodes needs 5 DescribeInstances and about a dozen CreateTags,
// so with these the cold sync and every resync meet RequestLimitExceeded.
var throttleBuckets = map[string]testenv.EC2Bucket{
	"DescribeInstances": {Capacity: 2, Refill: 0.5},
	"CreateTags":        {Capacity: 2, Refill: 0.5},
}

// throttleLabel is the label every Node of aws-throttle is created with
// (and no instance or group carries): the sync writes it as tag
// throttle-run to every group and instance (TwoWay, no merge base yet:
// the union), so the run has EC2 writes to throttle too.
const throttleLabel = awsLabelPrefix + "throttle-run"

// AWSThrottleResult is scenario aws-throttle.
type AWSThrottleResult struct {
	Nodes   int                          `json:"nodes"`
	Buckets map[string]testenv.EC2Bucket `json:"ec2Buckets"`
	// Sync is the cold sync: labels from the groups' and instances' tags,
	// the Nodes' throttle-run label to every group and instance.
	Sync   Phase         `json:"sync"`
	Resync *ResyncResult `json:"resync,omitempty"`
	// Throttled counts the RequestLimitExceeded answers over the sync and
	// the resyncs.
	Throttled int `json:"requestLimitExceeded"`
	// PassesOK and PassesFailed are tagsync_nodetags_passes_total by
	// result over the run.
	PassesOK     int `json:"passesOK"`
	PassesFailed int `json:"passesFailed"`
	// CloudMissing counts the groups and instances that lack the
	// throttle-run tag at the end.
	CloudMissing int  `json:"cloudMissing"`
	Met          bool `json:"met"`
}

// passResults are tagsync_nodetags_passes_total by result.
func passResults(c controller) (ok, failed int) {
	text, err := c.Metrics()
	if err != nil {
		return 0, 0
	}
	sel := fmt.Sprintf("nodetagsync=%q", syncName)
	return int(benchkit.MetricValue(text, "tagsync_nodetags_passes_total", sel, `result="ok"`)),
		int(benchkit.MetricValue(text, "tagsync_nodetags_passes_total", sel, `result="error"`))
}

// awsThrottle runs scenario aws-throttle on the aws estate: fresh Nodes
// carrying throttleLabel, the controller in this process, EC2's buckets
// shrunk; a cold sync and -resyncs resyncs, then the cloud is checked.
func (b *bench) awsThrottle(ctx context.Context, m *testenv.Moto, nodes []nodeSpec) (*AWSThrottleResult, error) {
	res := &AWSThrottleResult{Nodes: len(nodes), Buckets: throttleBuckets}
	for action, bk := range throttleBuckets {
		m.Rules.SetEC2Bucket(action, bk)
		defer m.Rules.ResetEC2Bucket(action)
	}
	marked := make([]nodeSpec, len(nodes))
	for i, n := range nodes {
		n.labels = map[string]string{throttleLabel: "on"}
		n.expect = maps.Clone(n.expect)
		n.expect[throttleLabel] = "on"
		marked[i] = n
	}
	ctl, err := startOn(ctx, b, marked, func(ctx context.Context) (*inProcess, error) { return b.startAWS(ctx, m) })
	if err != nil {
		return res, err
	}
	defer stop(ctl)
	e := b.awsSync(m, marked)
	if res.Sync, err = b.initialSync(ctx, "aws-throttle sync", e, ctl); err != nil {
		return res, err
	}
	res.Throttled = res.Sync.Calls.Throttled
	benchkit.Logf("aws-throttle sync: %d nodes in %.2fs; %s; %d RequestLimitExceeded; status synced=%d errors=%d",
		res.Nodes, res.Sync.LabelsSeconds, benchkit.OpsLine(res.Sync.Calls.ByOp), res.Sync.Calls.Throttled, res.Sync.Synced, res.Sync.Errors)
	res.Resync = &ResyncResult{Nodes: len(nodes), ReadBudget: ceilDiv(len(nodes), aws.MaxFilterValues) + ceilDiv(b.o.awsGroups, aws.GroupsPerRead)}
	if err := b.resyncs(ctx, "aws-throttle resync", e.cloud, ctl, res.Resync); err != nil {
		return res, err
	}
	for _, r := range res.Resync.Runs {
		res.Throttled += r.Calls.Throttled
	}
	res.PassesOK, res.PassesFailed = passResults(ctl)
	if res.CloudMissing, err = throttleTagMissing(ctx, m, b.o.awsGroups); err != nil {
		return res, err
	}
	res.Met = res.Throttled > 0 && res.PassesFailed == 0 && res.CloudMissing == 0 && res.Sync.Errors == 0 && res.Sync.Synced == res.Nodes
	benchkit.Logf("aws-throttle: %d RequestLimitExceeded; passes ok %d, failed %d; %d groups or instances lack the tag",
		res.Throttled, res.PassesOK, res.PassesFailed, res.CloudMissing)
	return res, nil
}

// throttleTagMissing counts the groups (pool00 ...) and running instances
// of the estate that lack the throttle-run tag (the harness's calls).
func throttleTagMissing(ctx context.Context, m *testenv.Moto, groups int) (int, error) {
	missing := 0
	var names []string
	for i := range groups {
		names = append(names, fmt.Sprintf("pool%02d", i))
	}
	as := autoscaling.NewFromConfig(m.Config)
	for chunk := range slices.Chunk(names, aws.GroupsPerRead) {
		out, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: chunk})
		if err != nil {
			return 0, err
		}
		for _, g := range out.AutoScalingGroups {
			if !slices.ContainsFunc(g.Tags, func(t astypes.TagDescription) bool { return sdkaws.ToString(t.Key) == "throttle-run" }) {
				missing++
			}
		}
	}
	pages := ec2.NewDescribeInstancesPaginator(ec2.NewFromConfig(m.Config), &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{{Name: sdkaws.String("instance-state-name"), Values: []string{"running", "pending"}}}})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		for _, r := range page.Reservations {
			for _, in := range r.Instances {
				if !slices.ContainsFunc(in.Tags, func(t ec2types.Tag) bool { return sdkaws.ToString(t.Key) == "throttle-run" }) {
					missing++
				}
			}
		}
	}
	return missing, nil
}

// Scenario aws-peer: the estate on which tagsync was compared with
// planetscale/k8s-node-tagger (which makes one DescribeTags and one
// CreateTags per Node it reconciles): 100 instances in no group, a Node
// each with five labels, a NodeTagSync NodeToCloud with no label prefix and
// includeTags naming the five keys, target Instance. Every EC2 call the
// controller makes is counted by the fidelity layer.

// peerKeys are the five label keys the peer estate syncs.
var peerKeys = []string{"app", "costcenter", "env", "owner", "team"}

// peerLabels are node i's five labels: five distinct sets over the estate
// (by i mod 5), so the initial sync has five distinct patches.
func peerLabels(i int) map[string]string {
	teams := []string{"payments", "search", "platform", "data", "frontend"}
	t := teams[i%len(teams)]
	return map[string]string{"app": "web", "env": "prod", "team": t, "owner": t + "-oncall", "costcenter": fmt.Sprintf("cc-%04d", 1000+i%len(teams))}
}

// AWSPeerResult is scenario aws-peer.
type AWSPeerResult struct {
	Nodes           int      `json:"nodes"`
	Keys            []string `json:"keys"`
	DistinctPatches int      `json:"distinctPatches"`
	// CacheWaitSeconds is how long the harness waits before each change,
	// so that the provider's read cache has expired (a label changes at
	// any time, mostly long after the last read).
	CacheWaitSeconds float64     `json:"cacheWaitSeconds"`
	Phases           []PeerPhase `json:"phases"`
	Met              bool        `json:"met"`
}

// PeerPhase is one phase of aws-peer: its EC2 calls against the goal and
// against k8s-node-tagger's (one DescribeTags and one CreateTags per Node
// it reconciles, computed from its documented behaviour, not run).
type PeerPhase struct {
	Name    string    `json:"name"`
	Seconds float64   `json:"seconds"`
	Calls   callStats `json:"calls"`
	Goal    int       `json:"goalCalls"`
	Peer    int       `json:"peerCalls"`
	Met     bool      `json:"met"`
}

// awsPeer runs scenario aws-peer on a fresh moto: the initial sync, a
// one-label change on one Node, a one-label change on 50 Nodes, and an
// unchanged resync.
func (b *bench) awsPeer(ctx context.Context) (*AWSPeerResult, error) {
	m, err := testenv.NewMoto()
	if err != nil {
		return nil, err
	}
	defer func() { _ = m.Stop() }()
	const n = 100
	ids, err := seed.CreateInstances(ctx, m.Config, testenv.MotoRegion, n, nil)
	if err != nil {
		return nil, err
	}
	nodes := make([]nodeSpec, n)
	want := map[string]map[string]string{} // instance ID → tags
	for i, id := range ids {
		nodes[i] = nodeSpec{name: fmt.Sprintf("peer-%03d", i), providerID: seed.ProviderID(testenv.MotoRegion, id), pool: "peer", labels: peerLabels(i)}
		want[id] = peerLabels(i)
	}
	res := &AWSPeerResult{Nodes: n, Keys: peerKeys, DistinctPatches: 5, CacheWaitSeconds: benchkit.Secs(aws.DefaultCacheTTL + time.Second)}
	ctl, err := startOn(ctx, b, nodes, func(ctx context.Context) (*inProcess, error) { return b.startAWS(ctx, m) })
	if err != nil {
		return res, err
	}
	defer stop(ctl)
	cloud := newMotoCloud(m)
	run := func(name string, goal, peer int, trigger func(context.Context) error) error {
		ph := PeerPhase{Name: name, Goal: goal, Peer: peer}
		cloud.resetCalls()
		prov := ctl.Calls()
		t0 := time.Now()
		if err := trigger(ctx); err != nil {
			return err
		}
		if err := awaitInstanceTags(ctx, m, ids, want, b.o.Timeout); err != nil {
			return fmt.Errorf("aws-peer %s: %w", name, err)
		}
		ph.Seconds = benchkit.Secs(time.Since(t0))
		if err := b.waitQuiet(ctx, 3*time.Second, ctl); err != nil {
			return err
		}
		ph.Calls = cloud.stats(benchkit.DiffCalls(prov, ctl.Calls()))
		ph.Met = ph.Calls.Reads+ph.Calls.Writes <= goal
		res.Phases = append(res.Phases, ph)
		benchkit.Logf("aws-peer %s: %d calls (%s) in %.2fs; goal <= %d; k8s-node-tagger %d", name, ph.Calls.Reads+ph.Calls.Writes,
			benchkit.OpsLine(ph.Calls.ByOp), ph.Seconds, goal, peer)
		return nil
	}
	relabel := func(ctx context.Context, count int, key, value string) error {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
		for i := range count {
			want[ids[i]][key] = value
		}
		return benchkit.Parallel(ctx, count, 32, func(ctx context.Context, i int) error {
			_, err := b.kube.CoreV1().Nodes().Patch(ctx, nodes[i].name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		})
	}
	if err := run("initial sync of 100", 1+res.DistinctPatches, 2*n, func(ctx context.Context) error {
		return b.createSync(ctx, func(s *v1alpha1.NodeTagSyncSpec) {
			s.Provider, s.Direction, s.Target, s.LabelPrefix = v1alpha1.ProviderAWS, v1alpha1.DirectionNodeToCloud, v1alpha1.TargetInstance, new(string)
			for _, k := range peerKeys {
				s.IncludeTags = append(s.IncludeTags, v1alpha1.TagPattern(k))
			}
		})
	}); err != nil {
		return res, err
	}
	time.Sleep(aws.DefaultCacheTTL + time.Second)
	if err := run("one label on one Node", 2, 2, func(ctx context.Context) error { return relabel(ctx, 1, "team", "search") }); err != nil {
		return res, err
	}
	time.Sleep(aws.DefaultCacheTTL + time.Second)
	if err := run("one label on 50 Nodes", 3, 2*50, func(ctx context.Context) error { return relabel(ctx, 50, "env", "staging") }); err != nil {
		return res, err
	}
	prev, err := b.lastFullSync(ctx)
	if err != nil {
		return res, err
	}
	nextSecond(prev)
	if err := run("unchanged resync", 1, 0, func(ctx context.Context) error {
		if err := b.requestSync(ctx); err != nil {
			return err
		}
		_, _, err := b.waitFullSyncAfter(ctx, prev)
		return err
	}); err != nil {
		return res, err
	}
	res.Met = true
	for _, ph := range res.Phases {
		res.Met = res.Met && ph.Met
	}
	return res, nil
}

// awaitInstanceTags polls the instances (the harness's calls, one
// DescribeInstances per 200) until each carries its wanted tags.
func awaitInstanceTags(ctx context.Context, m *testenv.Moto, ids []string, want map[string]map[string]string, timeout time.Duration) error {
	c := ec2.NewFromConfig(m.Config)
	var lacking []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		lacking = lacking[:0]
		for chunk := range slices.Chunk(ids, aws.MaxFilterValues) {
			out, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: sdkaws.String("instance-id"), Values: chunk}}})
			if err != nil {
				return false, nil
			}
			for _, r := range out.Reservations {
				for _, in := range r.Instances {
					have := map[string]string{}
					for _, t := range in.Tags {
						have[sdkaws.ToString(t.Key)] = sdkaws.ToString(t.Value)
					}
					if id := sdkaws.ToString(in.InstanceId); !carries(have, want[id]) {
						lacking = append(lacking, id)
					}
				}
			}
		}
		return len(lacking) == 0, nil
	})
	if err != nil {
		sort.Strings(lacking)
		return fmt.Errorf("%d instances lack their tags (%s): %w", len(lacking), strings.Join(lacking[:min(3, len(lacking))], ", "), err)
	}
	return nil
}

// throttleGoals and peerGoals are the verdicts of aws-throttle and
// aws-peer.
func throttleGoals(t *AWSThrottleResult) []benchkit.Goal {
	return []benchkit.Goal{{
		Goal:   fmt.Sprintf("5. AWS with EC2 throttling, %d nodes: in sync, no failed pass", t.Nodes),
		Target: "RequestLimitExceeded > 0; 0 failed passes; every node synced; every group and instance tagged",
		Measured: fmt.Sprintf("%d RequestLimitExceeded; %d failed / %d ok passes; %d/%d synced, %d errors; %d untagged; synced in %.1f s",
			t.Throttled, t.PassesFailed, t.PassesOK, t.Sync.Synced, t.Nodes, t.Sync.Errors, t.CloudMissing, t.Sync.StatusSeconds),
		Met: t.Met,
	}}
}

func peerGoals(p *AWSPeerResult) []benchkit.Goal {
	var g []benchkit.Goal
	for _, ph := range p.Phases {
		g = append(g, benchkit.Goal{Goal: "6. AWS peer estate (100 instances, NodeToCloud): " + ph.Name + ", EC2 calls",
			Target:   fmt.Sprintf("<= %d (k8s-node-tagger: %d)", ph.Goal, ph.Peer),
			Measured: fmt.Sprintf("%d (%s)", ph.Calls.Reads+ph.Calls.Writes, benchkit.OpsLine(ph.Calls.ByOp)), Met: ph.Met})
	}
	return g
}

// printLimits prints aws-throttle's and aws-peer's details.
func printLimits(w io.Writer, a *AWSResult) {
	if t := a.Throttle; t != nil {
		fmt.Fprintf(w, "AWS throttled (buckets %v): sync %.2fs (status %.2fs), %d passes (%s); %s; errors %v\n", t.Buckets, t.Sync.LabelsSeconds,
			t.Sync.StatusSeconds, passCount(t.Sync.PassLog), passLine(t.Sync.PassLog), benchkit.OpsLine(t.Sync.Calls.ByOp), t.Sync.Calls.Errors)
		if r := t.Resync; r != nil && len(r.Runs) > 0 {
			for i, run := range r.Runs {
				fmt.Fprintf(w, "  resync %d: pass %.2fs; %s; errors %v\n", i+1, run.PassSeconds, benchkit.OpsLine(run.Calls.ByOp), run.Calls.Errors)
			}
		}
	}
	if p := a.Peer; p != nil {
		for _, ph := range p.Phases {
			fmt.Fprintf(w, "AWS peer %s: %.2fs; %d reads, %d writes (%s); provider counted %s\n", ph.Name, ph.Seconds, ph.Calls.Reads, ph.Calls.Writes,
				benchkit.OpsLine(ph.Calls.ByOp), benchkit.OpsLine(ph.Calls.Provider))
		}
	}
}
