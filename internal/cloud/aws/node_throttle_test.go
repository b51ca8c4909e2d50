package aws

import (
	"errors"
	"fmt"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/testenv"
)

// fixedBackoff retries after a fixed delay.
type fixedBackoff time.Duration

// BackoffDelay returns the delay.
func (b fixedBackoff) BackoffDelay(int, error) (time.Duration, error) { return time.Duration(b), nil }

// shrinkEC2Bucket sets the AWS rules' bucket of an EC2 action for the
// test, and AWS's own again after it. The rules are shared by every test
// of the package, so a test calling it must not run in parallel (Go runs
// the parallel tests after the others).
func shrinkEC2Bucket(t *testing.T, action string, b testenv.EC2Bucket) {
	moto.Rules.SetEC2Bucket(action, b)
	t.Cleanup(func() { moto.Rules.ResetEC2Bucket(action) })
}

// TestSnapshotSlowsDownWhenThrottled: with EC2's DescribeInstances bucket
// shrunk to one token refilled at 5 a second, a snapshot of 8 instances in
// 4 calls is throttled, and ends with every node read: the throttled call
// is retried by the SDK, and the calls after it wait at the closed gate
// instead of failing the region.
func TestSnapshotSlowsDownWhenThrottled(t *testing.T) {
	e := newPatientEnv(t, func(o *Options) { o.maxIDsPerCall = 2 })
	nodes := instanceNodes(e.instances("us-east-1", 8, nil))
	shrinkEC2Bucket(t, "DescribeInstances", testenv.EC2Bucket{Capacity: 1, Refill: 5})
	wantSlowedDown(t, e, nodes, "no DescribeInstances was throttled: the test shows nothing")
}

// newPatientEnv is an env whose SDK retries a throttled call 3 times 300 ms
// apart, and whose gate closes for longer than that: the call after a
// throttled one meets it closed.
func newPatientEnv(t *testing.T, opts ...Option) *env {
	e := newEnv(t, append([]Option{WithLoadOptions(config.WithRetryer(func() sdkaws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3; o.Backoff = fixedBackoff(300 * time.Millisecond) })
	}))}, opts...)...)
	e.gates.base, e.gates.max = time.Second, 2*time.Second
	return e
}

// instanceNodes are Nodes on the instances.
func instanceNodes(ids []string) []cloud.Node {
	nodes := make([]cloud.Node, len(ids))
	for i, a := range ids {
		nodes[i] = node(ec2ID(a), "us-east-1", ec2ID(a))
	}
	return nodes
}

// wantSlowedDown takes a fresh snapshot of nodes: every node is read, and
// some DescribeInstances was throttled (else it fails with unthrottled).
func wantSlowedDown(t *testing.T, e *env, nodes []cloud.Node, unthrottled string) {
	t.Helper()
	snap, err := e.p.Snapshot(e.ctx, nodes, cloud.ReadOptions{Fresh: true})
	if err != nil || len(snap.Failed) != 0 {
		t.Fatalf("snapshot %v, failed %+v: want throttling to slow it down", err, snap.Failed)
	}
	for _, n := range nodes {
		if pl := snap.Placements[n.Name]; !pl.Managed || pl.Err != nil {
			t.Fatalf("node %s: %+v, want read", n.Name, pl)
		}
	}
	if got := e.counterValue(cloud.MetricThrottled, map[string]string{"provider": "aws", "operation": "ec2:DescribeInstances"}); got == 0 {
		t.Fatal(unthrottled)
	}
}

// TestPatchStillThrottled: a write EC2 keeps throttling past the SDK's
// retries and the node sync's patience fails with cloud.ErrThrottled and a
// RetryAfter, so the pass requeues.
func TestPatchStillThrottled(t *testing.T) {
	e := newEnv(t, WithLoadOptions(config.WithRetryer(func() sdkaws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3; o.Backoff = fixedBackoff(50 * time.Millisecond) })
	})), func(o *Options) { o.throttlePatience = time.Nanosecond })
	ids := e.instances("us-east-1", 1, nil)
	shrinkEC2Bucket(t, "CreateTags", testenv.EC2Bucket{Capacity: 0, Refill: 0})
	_, err := e.p.PatchTags(e.ctx, ids[0], tags.Patch{Set: tags.Set{"team": "blue"}})
	wait, ok := cloud.RetryAfter(err)
	if !errors.Is(err, cloud.ErrThrottled) || !ok || wait <= 0 {
		t.Fatalf("PatchTags = %v (retry after %s), want throttled with a RetryAfter", err, wait)
	}
	if got := e.p.Calls()["ec2:CreateTags"]; got != 3 {
		t.Fatalf("CreateTags requests = %d, want 3 (the SDK's attempts)", got)
	}
}

// TestPatchWaitsOutThrottling: a write still throttled once the SDK's
// retries are spent is sent again when the throttle gate opens, so the
// writes of a pass succeed, later, instead of failing it.
func TestPatchWaitsOutThrottling(t *testing.T) {
	e := newEnv(t, WithRetryMaxAttempts(1))
	e.gates.base, e.gates.max = time.Second, 2*time.Second
	ids := e.instances("us-east-1", 3, nil)
	shrinkEC2Bucket(t, "CreateTags", testenv.EC2Bucket{Capacity: 1, Refill: 1})
	for i, id := range ids {
		if _, err := e.p.PatchTags(e.ctx, id, tags.Patch{Set: tags.Set{"team": fmt.Sprint("blue", i)}}); err != nil {
			t.Fatalf("PatchTags %d: %v, want the write to wait out the throttling", i, err)
		}
	}
	for i, id := range ids {
		if got := e.tagsOf(id); got["team"] != fmt.Sprint("blue", i) {
			t.Errorf("instance %d tags = %v", i, got)
		}
	}
	if got := e.counterValue(cloud.MetricThrottled, map[string]string{"provider": "aws", "operation": "ec2:CreateTags"}); got == 0 {
		t.Fatal("no CreateTags was throttled: the test shows nothing")
	}
}

// TestAnotherClientOfTheAccountDrainsTheBucket: EC2's buckets are the
// account's in a region, whatever the access key: another client of the
// account (Karpenter, say) spends DescribeInstances' tokens, and tagsync's
// first snapshot, with its own key, meets the empty bucket, is throttled,
// waits at its gate, and still reads every node.
func TestAnotherClientOfTheAccountDrainsTheBucket(t *testing.T) {
	e := newPatientEnv(t)
	ids := e.instances("us-east-1", 2, nil)
	shrinkEC2Bucket(t, "DescribeInstances", testenv.EC2Bucket{Capacity: 3, Refill: 2})
	cfg := moto.Config.Copy()
	cfg.HTTPClient = e.http
	cfg.Credentials = credentials.NewStaticCredentialsProvider("AKIAKARPENTER", "secret", "")
	karpenter := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = "us-east-1"; o.RetryMaxAttempts = 1 })
	for range 3 {
		in := &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: sdkaws.String("instance-id"), Values: []string{ec2ID(ids[0])}}}}
		if _, err := karpenter.DescribeInstances(e.ctx, in); err != nil {
			t.Fatalf("the other client: %v", err)
		}
	}
	wantSlowedDown(t, e, instanceNodes(ids), "tagsync's first DescribeInstances was not throttled: the account's bucket is not shared")
}
