package aws

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/tags"
)

// batchResult is what a Fresh write reported for one ID.
type batchResult struct {
	res   cloud.Resource
	err   error
	times int
}

// patchBatch writes patch to ids with a Fresh WriteTags (the node sync's
// write) and collects its results by ID, failing unless each ID is
// reported pending, then with its result, exactly once.
func (e *env) patchBatch(ids []string, patch tags.Patch) map[string]*batchResult {
	e.t.Helper()
	got := map[string]*batchResult{}
	pending := map[string]int{}
	e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: ids, Patch: patch, Fresh: true}}, func(r cloud.WriteResult) error {
		if r.Pending {
			pending[r.ID]++
			return nil
		}
		if got[r.ID] == nil {
			got[r.ID] = &batchResult{}
		}
		got[r.ID].res, got[r.ID].err = cloud.Resource{ID: r.ID, Tags: r.Tags}, r.Err
		got[r.ID].times++
		return nil
	})
	for _, id := range ids {
		if pending[id] != 1 {
			e.t.Fatalf("%s reported pending %d times, want once", id, pending[id])
		}
	}
	for _, id := range ids {
		if r := got[id]; r == nil || r.times != 1 {
			e.t.Fatalf("%s reported %+v, want exactly once", id, r)
		}
	}
	return got
}

// TestFreshWriteCoalesces: 100 instances needing the identical patch
// cost one DescribeInstances, one DeleteTags and one CreateTags; each
// instance gets the patch and keeps its other tags.
func TestFreshWriteCoalesces(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.instances("us-east-1", 100, map[string]string{"keep": "k", "old": "x"})
	e.resetCalls()
	got := e.patchBatch(ids, tags.Patch{Set: tags.Set{"team": "blue"}, Delete: []string{"old"}})
	want := tags.Set{"keep": "k", "team": "blue"}
	for _, id := range ids {
		if r := got[id]; r.err != nil || r.res.ID != id || !maps.Equal(r.res.Tags, want) {
			t.Fatalf("%s: %+v, want %v", id, r, want)
		}
	}
	wantCalls(t, e.p, map[string]int{"ec2:DescribeInstances": 1, "ec2:DeleteTags": 1, "ec2:CreateTags": 1})
	for _, id := range []string{ids[0], ids[99]} {
		if tagsNow := e.tagsOf(id); !maps.Equal(tagsNow, map[string]string(want)) {
			t.Errorf("%s carries %v, want %v", id, tagsNow, want)
		}
	}
}

// TestFreshWriteGroupsByChange: instances whose change differs (a
// deleted tag with another value read) are written apart, an instance the
// patch does not change is not written, a missing one is cloud.ErrNotFound,
// and an Auto Scaling group is patched as PatchTags does.
func TestFreshWriteGroupsByChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	x := e.instances("us-east-1", 2, map[string]string{"old": "x"})
	y := e.instances("us-east-1", 1, map[string]string{"old": "y"})[0]
	done := e.instances("us-east-1", 1, map[string]string{"team": "blue"})[0]
	missing := e.arn("us-east-1", "instance", "i-0000000000000dead")
	groupARN, _ := seed.Group(t, e.seedConfig(), "us-east-1", "pool", 1, nil)
	e.resetCalls()
	ids := []string{x[0], y, done, missing, x[1], groupARN}
	got := e.patchBatch(ids, tags.Patch{Set: tags.Set{"team": "blue"}, Delete: []string{"old"}})
	for _, id := range []string{x[0], x[1], y, done, groupARN} {
		if r := got[id]; r.err != nil || !maps.Equal(r.res.Tags, tags.Set{"team": "blue"}) {
			t.Errorf("%s: %+v, want team=blue only", id, r)
		}
	}
	if r := got[missing]; !errors.Is(r.err, cloud.ErrNotFound) {
		t.Errorf("missing instance: %v, want ErrNotFound", r.err)
	}
	// One read of the instances; old=x and old=y written apart (a
	// DeleteTags and a CreateTags each); the group as PatchTags does it
	// (its tags, then one CreateTags for its instance).
	wantCalls(t, e.p, map[string]int{"ec2:DescribeInstances": 1, "ec2:DeleteTags": 2, "ec2:CreateTags": 3,
		"autoscaling:DescribeAutoScalingGroups": 1, "autoscaling:CreateOrUpdateTags": 1})
}

// TestFreshWriteDeleteIsConditional: a tag changed by someone else
// between the batch's read and its write is not deleted; the other
// instances lose it.
func TestFreshWriteDeleteIsConditional(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.instances("us-east-1", 3, map[string]string{"old": "x"})
	var once sync.Once
	e.tr.setInject(func(_ *http.Request, op, _ string) *http.Response {
		if op == opDeleteTags {
			once.Do(func() { e.setTags(map[string]string{"old": "theirs"}, ids[1]) })
		}
		return nil
	})
	t.Cleanup(func() { e.tr.setInject(nil) })
	e.patchBatch(ids, tags.Patch{Delete: []string{"old"}})
	for i, want := range []map[string]string{{}, {"old": "theirs"}, {}} {
		if got := e.tagsOf(ids[i]); !maps.Equal(got, want) {
			t.Errorf("instance %d carries %v, want %v", i, got, want)
		}
	}
}

// TestFreshWriteReadsWithinFilterLimit: 250 instances needing the
// identical patch are read afresh within EC2's 200 values per filter (two
// DescribeInstances, which the AWS rules refuse as one) and written with
// one CreateTags (1000 IDs a call).
func TestFreshWriteReadsWithinFilterLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.instances("us-east-1", 250, nil)
	e.resetCalls()
	got := e.patchBatch(ids, tags.Patch{Set: tags.Set{"team": "blue"}})
	for _, id := range ids {
		if r := got[id]; r.err != nil || r.res.Tags["team"] != "blue" {
			t.Fatalf("%s: %+v, want team=blue", id, r)
		}
	}
	wantCalls(t, e.p, map[string]int{"ec2:DescribeInstances": 2, "ec2:CreateTags": 1})
}

// TestFreshWriteTakesThePassRead: a write right after the Snapshot it
// was decided from takes the instances as that read found them: one
// DescribeInstances and one CreateTags for a pass that changes a label;
// a read older than WriteReadAge is read again before the write, and one
// with the cache off always is.
func TestFreshWriteTakesThePassRead(t *testing.T) {
	t.Parallel()
	now, clock := steppedClock(time.Now())
	e := newEnv(t, clock)
	const region = "us-east-1"
	ids := e.instances(region, 100, map[string]string{"team": "red"}) // ARNs
	nodes := make([]cloud.Node, len(ids))
	for i, id := range ids {
		nodes[i] = node(fmt.Sprintf("n%d", i), region, id[strings.LastIndex(id, "/")+1:])
	}
	if _, err := e.p.Snapshot(e.ctx, nodes, cloud.ReadOptions{Fresh: true}); err != nil {
		t.Fatal(err)
	}
	e.patchBatch(ids[:1], tags.Patch{Set: tags.Set{"team": "blue"}})
	wantCalls(t, e.p, map[string]int{"ec2:DescribeInstances": 1, "ec2:CreateTags": 1})
	if got := e.tagsOf(ids[0]); got["team"] != "blue" {
		t.Fatalf("instance tags = %v, want team=blue", got)
	}

	// Someone else changes the tag; a read that old is not taken.
	e.setTags(map[string]string{"team": "green"}, ids[1])
	now.Add(int64(WriteReadAge))
	got := e.patchBatch(ids[1:2], tags.Patch{Delete: []string{"team"}})
	if r := got[ids[1]]; r.err != nil || r.res.Tags["team"] != "" {
		t.Fatalf("patch after WriteReadAge = %+v", r)
	}
	wantCalls(t, e.p, map[string]int{"ec2:DescribeInstances": 2, "ec2:CreateTags": 1, "ec2:DeleteTags": 1})

	e.resetCalls(WithCacheTTL(-1))
	if _, err := e.p.Snapshot(e.ctx, nodes[2:3], cloud.ReadOptions{Fresh: true}); err != nil {
		t.Fatal(err)
	}
	e.patchBatch(ids[2:3], tags.Patch{Set: tags.Set{"team": "blue"}})
	wantCalls(t, e.p, map[string]int{"ec2:DescribeInstances": 2, "ec2:CreateTags": 1})
}
