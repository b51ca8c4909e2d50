package tags

import "testing"

func TestRestrictCloud(t *testing.T) {
	in := MergeInput{
		Base:   set("env", "a", "team", "x", "gone", "1"),
		Cloud:  set("env", "a", "team", "y", "gone", "1"),
		Node:   set("env", "b", "team", "z", "new", "n"),
		Policy: NodeWins,
	}
	res := Merge(CaseInsensitive, in)
	mustEqualPatch(t, "CloudPatch", res.CloudPatch, sets("env", "b", "team", "z", "new", "n").and(dels("gone")))
	// Only env and the deletion were written; team (a NodeWins conflict) and new were dropped.
	got := res.RestrictCloud(sets("env", "b").and(dels("GONE")))
	mustEqualPatch(t, "restricted", got.CloudPatch, sets("env", "b").and(dels("gone")))
	if !sameMap(got.NewBase, set("env", "b", "team", "x")) {
		t.Errorf("NewBase = %v", got.NewBase)
	}
	if len(got.Conflicts) != 1 || got.Conflicts[0].Winner != SideNone {
		t.Errorf("conflicts = %+v: the dropped winning write must leave it unresolved", got.Conflicts)
	}
	if res.Conflicts[0].Winner != SideNode || !sameMap(res.NewBase, set("env", "b", "team", "z", "new", "n")) {
		t.Error("RestrictCloud must not modify its receiver")
	}
	// A different value in applied is not the same operation.
	if other := res.RestrictCloud(sets("env", "other")); other.CloudPatch.Set.Has(CaseInsensitive, "env") {
		t.Errorf("different value kept: %s", fmtPatch(other.CloudPatch))
	}
	// The next merge proposes the dropped keys again.
	next := Merge(CaseInsensitive, MergeInput{Base: got.NewBase, Cloud: got.CloudPatch.Apply(CaseInsensitive, in.Cloud), Node: in.Node, Policy: NodeWins})
	mustEqualPatch(t, "retry", next.CloudPatch, sets("team", "z", "new", "n"))
}

func TestRestrictNode(t *testing.T) {
	res := Merge(CaseInsensitive, MergeInput{Base: set("env", "a", "x", "1"), Cloud: set("env", "b"), Node: set("env", "a", "x", "1"),
		From: Sources{"x": SideCloud}})
	mustEqualPatch(t, "NodePatch", res.NodePatch, sets("env", "b").and(dels("x")))
	got := res.RestrictNode(dels("x"))
	mustEqualPatch(t, "restricted", got.NodePatch, dels("x"))
	if !sameMap(got.NewBase, set("env", "a")) {
		t.Errorf("NewBase = %v", got.NewBase)
	}
	none := res.RestrictNode(Patch{})
	if !none.NodePatch.IsEmpty() || !sameMap(none.NewBase, set("env", "a", "x", "1")) {
		t.Errorf("nothing applied: %+v", none)
	}
}
