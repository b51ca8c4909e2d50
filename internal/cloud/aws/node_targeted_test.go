package aws

import (
	"maps"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/tags"
)

// TestSnapshotTargeted: after a full read, a targeted read
// (ReadOptions.Resources, canonical ARNs) reads only the changed resources,
// fresh: a changed group costs one DescribeAutoScalingGroups (its
// instances come from the cache), changed instances one DescribeInstances
// for all of them; each sees the tags changed since the full read.
func TestSnapshotTargeted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const region = "us-east-1"
	groupARN, members := seed.Group(t, e.seedConfig(), region, "Pool-Targeted", 2, map[string]string{"team": "a"})
	solos := e.instances(region, 2, map[string]string{"env": "dev"})
	nodes := []cloud.Node{node("g0", region, members[0]), node("g1", region, members[1]),
		node("s0", region, ec2ID(solos[0])), node("s1", region, ec2ID(solos[1]))}
	if _, err := e.p.Snapshot(e.ctx, nodes, cloud.ReadOptions{Fresh: true}); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, e.p, map[string]int{"ec2:DescribeInstances": 1, "autoscaling:DescribeAutoScalingGroups": 1})

	seed.SetGroupTags(t, e.seedConfig(), region, "Pool-Targeted", map[string]string{"team": "b"})
	e.setTags(map[string]string{"env": "prod"}, solos...)
	for _, step := range []struct {
		name    string
		nodes   []cloud.Node
		changed []string
		want    map[string]tags.Set // by ARN
		calls   map[string]int
	}{
		{"group", nodes[:2], []string{groupARN}, map[string]tags.Set{groupARN: {"team": "b"}},
			map[string]int{"ec2:DescribeInstances": 1, "autoscaling:DescribeAutoScalingGroups": 2}},
		{"instances", nodes[2:], solos, map[string]tags.Set{solos[0]: {"env": "prod"}, solos[1]: {"env": "prod"}},
			map[string]int{"ec2:DescribeInstances": 2, "autoscaling:DescribeAutoScalingGroups": 2}},
	} {
		ids := make([]string, len(step.changed))
		for i, id := range step.changed {
			ids[i] = cloud.CanonicalID(id)
		}
		snap, err := e.p.Snapshot(e.ctx, step.nodes, cloud.ReadOptions{Fresh: true, Resources: ids})
		if err != nil || len(snap.Failed) > 0 {
			t.Fatalf("%s: Snapshot: %v, failed %v", step.name, err, snap.Failed)
		}
		for id, want := range step.want {
			if got := snap.Resources[cloud.CanonicalID(id)]; got.ID != id || !maps.Equal(got.Tags, want) {
				t.Errorf("%s: resource %+v, want %s with %v", step.name, got, id, want)
			}
		}
		wantCalls(t, e.p, step.calls)
	}
}

// TestTakeTags: the tags a change carried replace a cached read older
// than the change (without the aws: ones; the instance keeps its group),
// so the next read from the cache returns them at no call; a change older
// than the cached read, or of a resource not cached, is not taken.
func TestTakeTags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const region = "us-east-1"
	groupARN, members := seed.Group(t, e.seedConfig(), region, "Pool-Take", 1, map[string]string{"team": "a"})
	solo := e.instances(region, 1, nil)[0]
	nodes := []cloud.Node{node("g0", region, members[0]), node("s0", region, ec2ID(solo))}
	before := time.Now()
	if _, err := e.p.Snapshot(e.ctx, nodes, cloud.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	carried := tags.Set{"env": "prod", "aws:autoscaling:groupName": "Pool-Take"}
	if e.p.TakeTags(cloud.CanonicalID(solo), carried, before) {
		t.Error("took the tags of a change older than the cached read")
	}
	if e.p.TakeTags(cloud.CanonicalID(e.arn(region, "instance", "i-0123456789abcdef0")), carried, time.Now()) {
		t.Error("took the tags of an instance not cached")
	}
	for _, id := range []string{solo, groupARN} {
		if !e.p.TakeTags(cloud.CanonicalID(id), carried, time.Now()) {
			t.Errorf("did not take the tags of %s", id)
		}
	}
	snap, err := e.p.Snapshot(e.ctx, nodes, cloud.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{solo, groupARN} {
		if got := snap.Resources[cloud.CanonicalID(id)].Tags; !maps.Equal(got, tags.Set{"env": "prod"}) {
			t.Errorf("%s read from the cache with %v, want the carried env=prod only", id, got)
		}
	}
	if pl := snap.Placements["g0"]; pl.Resource != groupARN {
		t.Errorf("g0 placed on %q after its instance's tags were taken, want its group", pl.Resource)
	}
	wantCalls(t, e.p, map[string]int{"ec2:DescribeInstances": 1, "autoscaling:DescribeAutoScalingGroups": 1})
}

// TestChangedResources: instance and group ARNs, lower-cased, name what a
// targeted read reads; other IDs name nothing.
func TestChangedResources(t *testing.T) {
	t.Parallel()
	c := changedResources([]string{
		"arn:aws:ec2:eu-west-1:123456789012:instance/i-0abc",
		"arn:aws:autoscaling:us-east-1:123456789012:autoscalinggroup:0000-1111:autoscalinggroupname/pool-a",
		"arn:aws:ec2:eu-west-1:123456789012:volume/vol-1", "not an arn",
	})
	if !maps.Equal(c.instances, map[regionalID]bool{{"eu-west-1", "i-0abc"}: true}) ||
		!maps.Equal(c.groups, map[regionalID]bool{{"us-east-1", "pool-a"}: true}) {
		t.Errorf("changedResources = %+v", c)
	}
	r := &nodeReader{changed: c}
	if !r.freshGroup(regionalID{"us-east-1", "Pool-A"}) || r.freshGroup(regionalID{"eu-west-1", "pool-a"}) || r.freshInstance(regionalID{"eu-west-1", "i-0abd"}) {
		t.Error("freshGroup/freshInstance pick the wrong resources")
	}
	if changedResources(nil) != nil {
		t.Error("no resources: not a targeted read")
	}
}
