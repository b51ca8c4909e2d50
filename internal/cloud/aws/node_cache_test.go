package aws

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
)

// cachedKeys returns the instance IDs and group names the node cache holds.
func cachedKeys(p *Provider) (instances, groups []string) {
	p.nodes.mu.Lock()
	defer p.nodes.mu.Unlock()
	for k := range maps.Keys(p.nodes.instances) {
		instances = append(instances, k.ec2ID)
	}
	for k := range maps.Keys(p.nodes.groups) {
		groups = append(groups, k.ec2ID)
	}
	slices.Sort(instances)
	slices.Sort(groups)
	return instances, groups
}

// TestSnapshotCacheForgetsGoneNodes: once the reads of removed Nodes'
// instances and groups are older than the TTL, the next snapshot forgets
// them; the cache holds what current Nodes name.
func TestSnapshotCacheForgetsGoneNodes(t *testing.T) {
	t.Parallel()
	now, clock := steppedClock(time.Now())
	e := newEnv(t, clock)
	cfg := e.seedConfig()
	const region = "us-east-1"
	_, a := seed.Group(t, cfg, region, "a", 1, nil)
	_, b := seed.Group(t, cfg, region, "b", 1, nil)
	both := []cloud.Node{node("n-a", region, a[0]), node("n-b", region, b[0])}
	if _, err := e.p.Snapshot(e.ctx, both, cloud.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	if inst, groups := cachedKeys(e.p); len(inst) != 2 || len(groups) != 2 {
		t.Fatalf("cache after the first snapshot: instances %v, groups %v; want 2 and 2", inst, groups)
	}
	now.Add(int64(DefaultCacheTTL))
	if _, err := e.p.Snapshot(e.ctx, both[:1], cloud.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	if inst, groups := cachedKeys(e.p); !slices.Equal(inst, []string{a[0]}) || !slices.Equal(groups, []string{"a"}) {
		t.Fatalf("cache after n-b is gone: instances %v, groups %v; want only n-a's instance %s and group a", inst, groups, a[0])
	}
}
