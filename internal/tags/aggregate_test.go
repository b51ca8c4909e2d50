package tags

import (
	"reflect"
	"testing"
)

func TestAggregate(t *testing.T) {
	cloud := set("Env", "prod", "team", "a", "old", "x")
	tests := []struct {
		name      string
		proposals []NodeProposal
		want      Patch
		conflicts []AggregateConflict
	}{
		{name: "no proposals"},
		{
			name:      "single node",
			proposals: []NodeProposal{{Node: "n1", Patch: sets("team", "b")}},
			want:      sets("team", "b"),
		},
		{
			name: "agreement, including silent nodes",
			proposals: []NodeProposal{
				{Node: "n2", Patch: sets("team", "b").and(dels("old"))},
				{Node: "n1", Patch: sets("team", "b").and(dels("OLD"))},
				{Node: "n3"},
			},
			want: sets("team", "b").and(dels("old")),
		},
		{
			name: "different values conflict and are not written",
			proposals: []NodeProposal{
				{Node: "n2", Patch: sets("team", "c", "new", "1")},
				{Node: "n1", Patch: sets("team", "b", "new", "1")},
			},
			want:      sets("new", "1"),
			conflicts: []AggregateConflict{{Name: "team", Ops: []NodeOp{{Node: "n1", Value: "b"}, {Node: "n2", Value: "c"}}}},
		},
		{
			name: "set versus delete conflicts",
			proposals: []NodeProposal{
				{Node: "n1", Patch: dels("old")},
				{Node: "n2", Patch: sets("old", "y")},
			},
			conflicts: []AggregateConflict{{Name: "old", Ops: []NodeOp{{Node: "n1", Delete: true}, {Node: "n2", Value: "y"}}}},
		},
		{
			name: "cloud spelling kept, no-ops dropped",
			proposals: []NodeProposal{
				{Node: "n1", Patch: sets("ENV", "stage", "team", "a").and(dels("gone"))},
				{Node: "n2", Patch: sets("env", "stage")},
			},
			want: sets("Env", "stage"),
		},
		{
			name: "new key spelled differently by nodes",
			proposals: []NodeProposal{
				{Node: "n1", Patch: sets("cost", "1")},
				{Node: "n2", Patch: sets("Cost", "1")},
			},
			want: sets("Cost", "1"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Aggregate(CaseInsensitive, cloud, tt.proposals)
			mustEqualPatch(t, "Patch", got.Patch, tt.want)
			if !(len(got.Conflicts) == 0 && len(tt.conflicts) == 0) && !reflect.DeepEqual(got.Conflicts, tt.conflicts) {
				t.Errorf("conflicts = %+v\nwant %+v", got.Conflicts, tt.conflicts)
			}
		})
	}
}

// TestScaleSetFlow runs the full per-node merge + aggregate + restrict cycle
// for two nodes of one scale set whose users changed the same label differently.
func TestScaleSetFlow(t *testing.T) {
	cloud := set("env", "prod", "team", "a")
	base := cloud.Clone()
	n1 := Merge(CaseInsensitive, MergeInput{Base: base, Cloud: cloud, Node: set("env", "prod", "team", "b", "cost", "1")})
	n2 := Merge(CaseInsensitive, MergeInput{Base: base, Cloud: cloud, Node: set("env", "prod", "team", "c", "cost", "1")})
	agg := Aggregate(CaseInsensitive, cloud, []NodeProposal{{Node: "n1", Patch: n1.CloudPatch}, {Node: "n2", Patch: n2.CloudPatch}})
	mustEqualPatch(t, "aggregate", agg.Patch, sets("cost", "1"))
	if len(agg.Conflicts) != 1 || agg.Conflicts[0].Name != "team" {
		t.Fatalf("conflicts = %+v", agg.Conflicts)
	}
	n1 = n1.RestrictCloud(agg.Patch)
	if !sameMap(n1.NewBase, set("env", "prod", "team", "a", "cost", "1")) {
		t.Errorf("n1 NewBase = %v: team must keep its old base entry", n1.NewBase)
	}
	mustEqualPatch(t, "n1 CloudPatch", n1.CloudPatch, sets("cost", "1"))
	// Next cycle: nothing changed, so the same proposal comes again; no flip-flop.
	cloud = agg.Patch.Apply(CaseInsensitive, cloud)
	again := Merge(CaseInsensitive, MergeInput{Base: n1.NewBase, Cloud: cloud, Node: set("env", "prod", "team", "b", "cost", "1")})
	mustEqualPatch(t, "n1 again", again.CloudPatch, sets("team", "b"))
}

// One Node cannot delete a shared resource's tag while other Nodes hold
// it: they vote to keep it, and it is a conflict; once none holds it, it
// is deleted.
func TestAggregateDeletionNeedsEveryHolder(t *testing.T) {
	cloud := set("team", "a", "env", "p")
	res := Aggregate(CaseInsensitive, cloud, []NodeProposal{
		{Node: "n1", Patch: dels("team"), Holds: set("env", "p")},
		{Node: "n2", Holds: set("team", "a", "env", "p")},
		{Node: "n3", Holds: set("env", "p")},
	})
	if !res.Patch.IsEmpty() || len(res.Conflicts) != 1 || len(res.Conflicts[0].Ops) != 2 || !res.Conflicts[0].Ops[1].Keep {
		t.Fatalf("one of two holders deleting: %+v", res)
	}
	res = Aggregate(CaseInsensitive, cloud, []NodeProposal{
		{Node: "n1", Patch: dels("team"), Holds: set("env", "p")},
		{Node: "n2", Patch: dels("TEAM"), Holds: set("env", "p")},
		{Node: "n3", Holds: set("env", "p")},
	})
	mustEqualPatch(t, "every holder deleting", res.Patch, dels("team"))
}
