package tags

import "testing"

// checkMergeInvariants asserts what must hold for every Merge result.
func checkMergeInvariants(t *testing.T, nc NameCase, in MergeInput, res MergeResult) {
	t.Helper()
	checkDirection(t, nc, in, res)
	checkNoOps(t, nc, in, res)
	checkAgreement(t, nc, in, res)
	checkConvergence(t, nc, in, res)
	if sameMap(in.Cloud, in.Node) && sameMap(in.Cloud, in.Base) && in.Base != nil {
		if !res.CloudPatch.IsEmpty() || !res.NodePatch.IsEmpty() || len(res.Conflicts) > 0 || !res.NewBase.Equal(nc, in.Base) {
			t.Errorf("Cloud == Node == Base must change nothing: %+v", res)
		}
	}
}

func checkDirection(t *testing.T, nc NameCase, in MergeInput, res MergeResult) {
	t.Helper()
	if !in.Direction.writes(SideCloud) && !res.CloudPatch.IsEmpty() {
		t.Errorf("direction %s wrote the cloud: %s", in.Direction, fmtPatch(res.CloudPatch))
	}
	if !in.Direction.writes(SideNode) && !res.NodePatch.IsEmpty() {
		t.Errorf("direction %s wrote the node: %s", in.Direction, fmtPatch(res.NodePatch))
	}
	if res.NewBase == nil || len(res.NewBase.Collisions(nc)) > 0 {
		t.Errorf("NewBase %v is nil or has case collisions", res.NewBase)
	}
}

// checkNoOps asserts that every operation changes something and no key is in both patches.
func checkNoOps(t *testing.T, nc NameCase, in MergeInput, res MergeResult) {
	t.Helper()
	for n, v := range res.CloudPatch.Set {
		if cur, ok := in.Cloud.Get(nc, n); ok && cur == v {
			t.Errorf("cloud set %s=%q is a no-op", n, v)
		}
		if nv, del, ok := res.NodePatch.Op(nc, n); ok && (del || nv != v) {
			t.Errorf("%s is in both patches, and not as a rename to the written value", n)
		}
	}
	for _, n := range res.CloudPatch.Delete {
		if !in.Cloud.Has(nc, n) {
			t.Errorf("cloud delete %s is a no-op", n)
		}
	}
	for n, v := range res.NodePatch.Set {
		if sp, cur, ok := in.Node.Lookup(nc, n); ok && cur == v && sp == n {
			t.Errorf("node set %s=%q is a no-op", n, v)
		}
	}
	for _, n := range res.NodePatch.Delete {
		if !in.Node.Has(nc, n) {
			t.Errorf("node delete %s is a no-op", n)
		}
		if _, _, ok := res.CloudPatch.Op(nc, n); ok {
			t.Errorf("%s is in both patches", n)
		}
	}
}

// checkAgreement asserts that after both patches the sides agree with NewBase
// on every key, except unresolved conflicts and never-synced additions left
// alone in one-way directions, which keep their old base entry.
func checkAgreement(t *testing.T, nc NameCase, in MergeInput, res MergeResult) {
	t.Helper()
	base := in.Base
	if res.Wiped && in.Direction.writes(SideNode) {
		base = nil
	}
	cloud, node := res.CloudPatch.Apply(nc, in.Cloud), res.NodePatch.Apply(nc, in.Node)
	unresolved := map[string]bool{}
	for _, c := range res.Conflicts {
		if c.Winner == SideNone {
			unresolved[nc.Key(c.Name)] = true
		}
	}
	hold := keySet(nc, in.Hold)
	for _, k := range unionKeys(cloud.index(nc), node.index(nc), base.index(nc), res.NewBase.index(nc)) {
		c, n := stateOf(cloud, cloud.index(nc), k), stateOf(node, node.index(nc), k)
		b, nb := stateOf(base, base.index(nc), k), stateOf(res.NewBase, res.NewBase.index(nc), k)
		switch {
		case hold[k] || !c.same(n):
			if !nb.same(b) {
				t.Errorf("key %s: sides disagree (cloud %+v, node %+v) but NewBase %+v != old base %+v", k, c, n, nb, b)
			}
			if hold[k] {
				continue
			}
			leftAlone := in.Direction != TwoWay && in.Direction != "" && !b.ok && c.ok != n.ok
			if !unresolved[k] && !leftAlone {
				t.Errorf("key %s: sides disagree after merge (cloud %+v, node %+v) without a reported conflict", k, c, n)
			}
		case !nb.same(c):
			t.Errorf("key %s: sides agree on %+v but NewBase has %+v", k, c, nb)
		}
	}
}

// checkConvergence asserts that merging again after applying the patches
// writes nothing and keeps NewBase.
func checkConvergence(t *testing.T, nc NameCase, in MergeInput, res MergeResult) {
	t.Helper()
	again := in
	again.Base = res.NewBase
	again.Cloud = res.CloudPatch.Apply(nc, in.Cloud)
	again.Node = res.NodePatch.Apply(nc, in.Node)
	second := Merge(nc, again)
	if !second.CloudPatch.IsEmpty() || !second.NodePatch.IsEmpty() {
		t.Errorf("second merge is not a no-op: cloud %s node %s (first: %+v)", fmtPatch(second.CloudPatch), fmtPatch(second.NodePatch), res)
	}
	if !second.NewBase.Equal(nc, res.NewBase) {
		t.Errorf("second merge moved NewBase from %v to %v", res.NewBase, second.NewBase)
	}
}
