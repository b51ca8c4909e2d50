package aws

import (
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
)

// TestSnapshotNewInstanceGrace: an instance EC2 does not show (yet) is not
// synced, with a reason saying it is looked for again, and is read again
// at the next pass (its miss is not cached) until NewInstanceGrace after
// it was first missed; then it is not found. The other nodes are read.
func TestSnapshotNewInstanceGrace(t *testing.T) {
	t.Parallel()
	now, clock := steppedClock(time.Now())
	e := newEnv(t, clock)
	const region = "us-east-1"
	known := ec2ID(e.instances(region, 1, nil)[0])
	const unknown = "i-0123456789abcdef0"
	nodes := []cloud.Node{node("known", region, known), node("new", region, unknown)}
	snapshot := func() cloud.Snapshot {
		t.Helper()
		snap, err := e.p.Snapshot(e.ctx, nodes, cloud.ReadOptions{})
		if err != nil || len(snap.Failed) != 0 {
			t.Fatalf("Snapshot = %+v, %v", snap.Failed, err)
		}
		if pl := snap.Placements["known"]; !pl.Managed {
			t.Fatalf("known node: %+v", pl)
		}
		return snap
	}
	if pl := snapshot().Placements["new"]; pl.Managed || pl.Err != nil || !strings.Contains(pl.Reason, "not known to EC2 in region us-east-1 yet") {
		t.Fatalf("new node: %+v, want not synced yet", pl)
	}
	before := e.p.Calls()["ec2:DescribeInstances"]
	now.Add(int64(time.Second))
	snapshot()
	if got := e.p.Calls()["ec2:DescribeInstances"]; got != before+1 {
		t.Fatalf("DescribeInstances %d -> %d at the next pass, want the missed instance read again (the other from the cache)", before, got)
	}
	now.Add(int64(NewInstanceGrace))
	if pl := snapshot().Placements["new"]; pl.Managed || !strings.Contains(pl.Reason, "EC2 instance "+unknown+" not found in region us-east-1") {
		t.Fatalf("new node after the grace: %+v, want not found", pl)
	}
}

// TestSnapshotNewInstanceGraceFromNodeCreation: with the Node's creation
// time known, the grace counts from it, not from the first miss: a Node
// created a minute ago whose instance EC2 does not show is NotYet (not
// synced yet, looked for again) until NewInstanceGrace after its creation,
// and one created before that is not found at its very first pass.
func TestSnapshotNewInstanceGraceFromNodeCreation(t *testing.T) {
	t.Parallel()
	start := time.Now()
	now, clock := steppedClock(start)
	e := newEnv(t, clock)
	const region = "us-east-1"
	fresh, old := node("fresh", region, "i-0123456789abcdef0"), node("old", region, "i-0123456789abcdef1")
	fresh.Created, old.Created = start.Add(-time.Minute), start.Add(-NewInstanceGrace-time.Second)
	snap, err := e.p.Snapshot(e.ctx, []cloud.Node{fresh, old}, cloud.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pl := snap.Placements["fresh"]; pl.Managed || !pl.NotYet || !strings.Contains(pl.Reason, "after its Node was created") {
		t.Errorf("a Node created a minute ago: %+v, want NotYet, counted from the Node's creation", pl)
	}
	if pl := snap.Placements["old"]; pl.Managed || pl.NotYet || !strings.Contains(pl.Reason, "not found in region") {
		t.Errorf("a Node created before the grace: %+v, want not found at once", pl)
	}
	now.Add(int64(time.Minute + time.Second))
	snap, err = e.p.Snapshot(e.ctx, []cloud.Node{fresh}, cloud.ReadOptions{})
	if pl := snap.Placements["fresh"]; err != nil || pl.NotYet || !strings.Contains(pl.Reason, "not found in region") {
		t.Errorf("the same Node past the grace: %+v, %v; want not found", pl, err)
	}
}
