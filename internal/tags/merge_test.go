package tags

import (
	"strings"
	"testing"
)

var (
	directions = []Direction{TwoWay, CloudToNode, NodeToCloud}
	policies   = []Policy{Ignore, CloudWins, NodeWins}
)

// outcome is the expected result of one merge.
type outcome struct {
	cloud, node Patch
	conflicts   []string // "name:winner"
	base        Set
	wiped       bool
}

// scenario is one situation, with the expected outcome per "Direction/Policy",
// "Direction" or "*" (looked up in that order).
type scenario struct {
	name              string
	base, cloud, node Set
	// from is where the base's tags came from (nil: not known).
	from Sources
	want map[string]outcome
}

// fromCloud is the Sources of tags that came from the cloud.
func fromCloud(names ...string) Sources {
	s := Sources{}
	for _, n := range names {
		s[n] = SideCloud
	}
	return s
}

func (s scenario) expect(d Direction, p Policy) outcome {
	for _, k := range []string{string(d) + "/" + string(p), string(d), "*"} {
		if o, ok := s.want[k]; ok {
			return o
		}
	}
	panic("no expectation for " + s.name + " " + string(d) + "/" + string(p))
}

// k is the stable key present everywhere in most scenarios: it must never be written.
const k = "keep"

// envAOrB is the expectation of the scenarios where cloud and node set env to
// different values (a and b) and the policy decides.
var envAOrB = map[string]outcome{
	"*":                     {conflicts: []string{"env:none"}, base: set(k, "1")},
	"TwoWay/CloudWins":      {node: sets("env", "a"), conflicts: []string{"env:cloud"}, base: set(k, "1", "env", "a")},
	"CloudToNode/CloudWins": {node: sets("env", "a"), conflicts: []string{"env:cloud"}, base: set(k, "1", "env", "a")},
	"TwoWay/NodeWins":       {cloud: sets("env", "b"), conflicts: []string{"env:node"}, base: set(k, "1", "env", "b")},
	"NodeToCloud/NodeWins":  {cloud: sets("env", "b"), conflicts: []string{"env:node"}, base: set(k, "1", "env", "b")},
}

var scenarios = []scenario{
	{
		name: "unchanged", base: set(k, "1", "env", "a"), cloud: set(k, "1", "env", "a"), node: set(k, "1", "env", "a"),
		want: map[string]outcome{"*": {base: set(k, "1", "env", "a")}},
	},
	{
		name: "cloud changed", base: set(k, "1", "env", "a"), cloud: set(k, "1", "env", "b"), node: set(k, "1", "env", "a"),
		want: map[string]outcome{
			"*":                    {node: sets("env", "b"), base: set(k, "1", "env", "b")},
			"NodeToCloud":          {conflicts: []string{"env:none"}, base: set(k, "1", "env", "a")},
			"NodeToCloud/NodeWins": {cloud: sets("env", "a"), conflicts: []string{"env:node"}, base: set(k, "1", "env", "a")},
		},
	},
	{
		name: "node changed", base: set(k, "1", "env", "a"), cloud: set(k, "1", "env", "a"), node: set(k, "1", "env", "b"),
		want: map[string]outcome{
			"*":                     {cloud: sets("env", "b"), base: set(k, "1", "env", "b")},
			"CloudToNode":           {conflicts: []string{"env:none"}, base: set(k, "1", "env", "a")},
			"CloudToNode/CloudWins": {node: sets("env", "a"), conflicts: []string{"env:cloud"}, base: set(k, "1", "env", "a")},
		},
	},
	{
		name: "both changed the same", base: set(k, "1", "env", "a"), cloud: set(k, "1", "env", "b"), node: set(k, "1", "env", "b"),
		want: map[string]outcome{"*": {base: set(k, "1", "env", "b")}},
	},
	{
		name: "both changed differently", base: set(k, "1", "env", "a"), cloud: set(k, "1", "env", "b"), node: set(k, "1", "env", "c"),
		want: map[string]outcome{
			"*":                     {conflicts: []string{"env:none"}, base: set(k, "1", "env", "a")},
			"TwoWay/CloudWins":      {node: sets("env", "b"), conflicts: []string{"env:cloud"}, base: set(k, "1", "env", "b")},
			"CloudToNode/CloudWins": {node: sets("env", "b"), conflicts: []string{"env:cloud"}, base: set(k, "1", "env", "b")},
			"TwoWay/NodeWins":       {cloud: sets("env", "c"), conflicts: []string{"env:node"}, base: set(k, "1", "env", "c")},
			"NodeToCloud/NodeWins":  {cloud: sets("env", "c"), conflicts: []string{"env:node"}, base: set(k, "1", "env", "c")},
		},
	},
	{
		name: "deleted in the cloud", base: set(k, "1", "env", "a"), cloud: set(k, "1"), node: set(k, "1", "env", "a"), from: fromCloud("env"),
		want: map[string]outcome{
			"*":                    {node: dels("env"), base: set(k, "1")},
			"NodeToCloud":          {conflicts: []string{"env:none"}, base: set(k, "1", "env", "a")},
			"NodeToCloud/NodeWins": {cloud: sets("env", "a"), conflicts: []string{"env:node"}, base: set(k, "1", "env", "a")},
		},
	},
	{
		name: "deleted on the node", base: set(k, "1", "env", "a"), cloud: set(k, "1", "env", "a"), node: set(k, "1"),
		want: map[string]outcome{
			"*":                     {cloud: dels("env"), base: set(k, "1")},
			"CloudToNode":           {conflicts: []string{"env:none"}, base: set(k, "1", "env", "a")},
			"CloudToNode/CloudWins": {node: sets("env", "a"), conflicts: []string{"env:cloud"}, base: set(k, "1", "env", "a")},
		},
	},
	{
		name: "deleted on both", base: set(k, "1", "env", "a"), cloud: set(k, "1"), node: set(k, "1"),
		want: map[string]outcome{"*": {base: set(k, "1")}},
	},
	{
		name: "deleted in the cloud, changed on the node", base: set(k, "1", "env", "a"), cloud: set(k, "1"), node: set(k, "1", "env", "b"),
		want: map[string]outcome{
			"*":                     {conflicts: []string{"env:none"}, base: set(k, "1", "env", "a")},
			"TwoWay/CloudWins":      {node: dels("env"), conflicts: []string{"env:cloud"}, base: set(k, "1")},
			"CloudToNode/CloudWins": {node: dels("env"), conflicts: []string{"env:cloud"}, base: set(k, "1")},
			"TwoWay/NodeWins":       {cloud: sets("env", "b"), conflicts: []string{"env:node"}, base: set(k, "1", "env", "b")},
			"NodeToCloud/NodeWins":  {cloud: sets("env", "b"), conflicts: []string{"env:node"}, base: set(k, "1", "env", "b")},
		},
	},
	{
		name: "added in the cloud", base: set(k, "1"), cloud: set(k, "1", "env", "a"), node: set(k, "1"),
		want: map[string]outcome{
			"*":           {node: sets("env", "a"), base: set(k, "1", "env", "a")},
			"NodeToCloud": {base: set(k, "1")}, // tags written by others are left alone
		},
	},
	{
		name: "added on the node", base: set(k, "1"), cloud: set(k, "1"), node: set(k, "1", "env", "a"),
		want: map[string]outcome{
			"*":           {cloud: sets("env", "a"), base: set(k, "1", "env", "a")},
			"CloudToNode": {base: set(k, "1")}, // never synced: left alone, not deleted
		},
	},
	{
		name: "added on both differently", base: set(k, "1"), cloud: set(k, "1", "env", "a"), node: set(k, "1", "env", "b"),
		want: envAOrB,
	},
	{
		name: "no history: union", base: nil, cloud: set(k, "1", "c", "1"), node: set(k, "1", "n", "2"),
		want: map[string]outcome{
			"TwoWay":      {cloud: sets("n", "2"), node: sets("c", "1"), base: set(k, "1", "c", "1", "n", "2")},
			"CloudToNode": {node: sets("c", "1"), base: set(k, "1", "c", "1")},
			"NodeToCloud": {cloud: sets("n", "2"), base: set(k, "1", "n", "2")},
		},
	},
	{
		name: "no history: values differ", base: nil, cloud: set(k, "1", "env", "a"), node: set(k, "1", "env", "b"),
		want: envAOrB,
	},
	{
		name: "no history: empty node gets everything, nothing deleted", base: nil, cloud: set("a", "1", "b", "2"), node: Set{},
		want: map[string]outcome{
			"*":           {node: sets("a", "1", "b", "2"), base: set("a", "1", "b", "2")},
			"NodeToCloud": {base: Set{}},
		},
	},
	{
		name: "wholesale wipe", base: set(k, "1", "env", "a", "team", "x"), cloud: set("aks-managed", "z"),
		node: set(k, "1", "env", "a", "team", "x"),
		want: map[string]outcome{
			"TwoWay": {cloud: sets(k, "1", "env", "a", "team", "x"), node: sets("aks-managed", "z"), wiped: true,
				base: set(k, "1", "env", "a", "team", "x", "aks-managed", "z")},
			"CloudToNode": {node: sets("aks-managed", "z"), wiped: true, base: set("aks-managed", "z")},
			"NodeToCloud": {conflicts: []string{"env:none", "keep:none", "team:none"}, wiped: true,
				base: set(k, "1", "env", "a", "team", "x")},
			"NodeToCloud/NodeWins": {cloud: sets(k, "1", "env", "a", "team", "x"), wiped: true,
				conflicts: []string{"env:node", "keep:node", "team:node"}, base: set(k, "1", "env", "a", "team", "x")},
		},
	},
	{
		name: "wipe to empty", base: set("env", "a", "team", "x"), cloud: Set{}, node: set("env", "a", "team", "x"),
		want: map[string]outcome{
			"TwoWay":               {cloud: sets("env", "a", "team", "x"), wiped: true, base: set("env", "a", "team", "x")},
			"CloudToNode":          {wiped: true, base: Set{}},
			"NodeToCloud":          {conflicts: []string{"env:none", "team:none"}, wiped: true, base: set("env", "a", "team", "x")},
			"NodeToCloud/NodeWins": {cloud: sets("env", "a", "team", "x"), conflicts: []string{"env:node", "team:node"}, wiped: true, base: set("env", "a", "team", "x")},
		},
	},
	{
		name: "not a wipe: node changed too", base: set("env", "a", "team", "x"), cloud: Set{}, node: set("env", "b", "team", "y"),
		want: map[string]outcome{
			"*":                     {conflicts: []string{"env:none", "team:none"}, base: set("env", "a", "team", "x")},
			"TwoWay/CloudWins":      {node: dels("env", "team"), conflicts: []string{"env:cloud", "team:cloud"}, base: Set{}},
			"CloudToNode/CloudWins": {node: dels("env", "team"), conflicts: []string{"env:cloud", "team:cloud"}, base: Set{}},
			"TwoWay/NodeWins":       {cloud: sets("env", "b", "team", "y"), conflicts: []string{"env:node", "team:node"}, base: set("env", "b", "team", "y")},
			"NodeToCloud/NodeWins":  {cloud: sets("env", "b", "team", "y"), conflicts: []string{"env:node", "team:node"}, base: set("env", "b", "team", "y")},
		},
	},
	{
		name: "single deletion among several is not a wipe", base: set("env", "a", "team", "x"), cloud: set("team", "x"), from: fromCloud("env"),
		node: set("env", "a", "team", "x"),
		want: map[string]outcome{
			"*":                    {node: dels("env"), base: set("team", "x")},
			"NodeToCloud":          {conflicts: []string{"env:none"}, base: set("env", "a", "team", "x")},
			"NodeToCloud/NodeWins": {cloud: sets("env", "a"), conflicts: []string{"env:node"}, base: set("env", "a", "team", "x")},
		},
	},
	{
		name: "last key deleted is not a wipe", base: set("env", "a"), cloud: Set{}, node: set("env", "a"), from: fromCloud("env"),
		want: map[string]outcome{
			"*":                    {node: dels("env"), base: Set{}},
			"NodeToCloud":          {conflicts: []string{"env:none"}, base: set("env", "a")},
			"NodeToCloud/NodeWins": {cloud: sets("env", "a"), conflicts: []string{"env:node"}, base: set("env", "a")},
		},
	},
	{
		name: "cloud renames Env to env", base: set(k, "1", "Env", "a"), cloud: set(k, "1", "env", "a"), node: set(k, "1", "Env", "a"),
		want: map[string]outcome{
			"*":           {node: sets("env", "a"), base: set(k, "1", "env", "a")},
			"NodeToCloud": {base: set(k, "1", "env", "a")},
		},
	},
	{
		name: "node value change keeps the cloud spelling", base: set("Env", "a"), cloud: set("Env", "a"), node: set("ENV", "b"),
		want: map[string]outcome{
			"*":                     {cloud: sets("Env", "b"), node: sets("Env", "b"), base: set("Env", "b")},
			"NodeToCloud":           {cloud: sets("Env", "b"), base: set("Env", "b")},
			"CloudToNode":           {conflicts: []string{"Env:none"}, base: set("Env", "a")},
			"CloudToNode/CloudWins": {node: sets("Env", "a"), conflicts: []string{"Env:cloud"}, base: set("Env", "a")},
		},
	},
	{
		name: "empty values are values", base: set("env", ""), cloud: set("env", "x"), node: set("env", ""),
		want: map[string]outcome{
			"*":                    {node: sets("env", "x"), base: set("env", "x")},
			"NodeToCloud":          {conflicts: []string{"env:none"}, base: set("env", "")},
			"NodeToCloud/NodeWins": {cloud: sets("env", ""), conflicts: []string{"env:node"}, base: set("env", "")},
		},
	},
}

func TestMergeMatrix(t *testing.T) { runMergeMatrix(t, CaseInsensitive, scenarios) }

// runMergeMatrix merges every scenario in every Direction and Policy, matching
// names as nc says, and checks the expected outcome and the invariants.
func runMergeMatrix(t *testing.T, nc NameCase, scenarios []scenario) {
	for _, sc := range scenarios {
		for _, d := range directions {
			for _, p := range policies {
				t.Run(sc.name+"/"+string(d)+"/"+string(p), func(t *testing.T) {
					in := MergeInput{Base: sc.base, Cloud: sc.cloud, Node: sc.node, From: sc.from, Direction: d, Policy: p}
					res := Merge(nc, in)
					want := sc.expect(d, p)
					mustEqualPatch(t, "CloudPatch", res.CloudPatch, want.cloud)
					mustEqualPatch(t, "NodePatch", res.NodePatch, want.node)
					if got := conflictSummary(res.Conflicts); !sameStrings(got, want.conflicts) {
						t.Errorf("conflicts = %v, want %v", got, want.conflicts)
					}
					if !sameMap(res.NewBase, want.base) {
						t.Errorf("NewBase = %v, want %v", res.NewBase, want.base)
					}
					if res.Wiped != want.wiped {
						t.Errorf("Wiped = %v, want %v", res.Wiped, want.wiped)
					}
					checkMergeInvariants(t, nc, in, res)
				})
			}
		}
	}
}

func TestMergeDefaultsAreTwoWayIgnore(t *testing.T) {
	for _, sc := range scenarios {
		got := Merge(CaseInsensitive, MergeInput{Base: sc.base, Cloud: sc.cloud, Node: sc.node})
		want := Merge(CaseInsensitive, MergeInput{Base: sc.base, Cloud: sc.cloud, Node: sc.node, Direction: TwoWay, Policy: Ignore})
		if !samePatch(got.CloudPatch, want.CloudPatch) || !samePatch(got.NodePatch, want.NodePatch) || !sameMap(got.NewBase, want.NewBase) {
			t.Errorf("%s: zero Direction/Policy differ from TwoWay/Ignore", sc.name)
		}
	}
}

func TestMergeUnknownDirectionWritesNothing(t *testing.T) {
	for _, sc := range scenarios {
		in := MergeInput{Base: sc.base, Cloud: sc.cloud, Node: sc.node, Direction: "Sideways", Policy: CloudWins}
		res := Merge(CaseInsensitive, in)
		if !res.CloudPatch.IsEmpty() || !res.NodePatch.IsEmpty() {
			t.Errorf("%s: unknown direction wrote %s / %s", sc.name, fmtPatch(res.CloudPatch), fmtPatch(res.NodePatch))
		}
	}
}

func TestMergeConflictDetails(t *testing.T) {
	res := Merge(CaseInsensitive, MergeInput{Base: set("env", "a"), Cloud: Set{}, Node: set("env", "c")})
	if len(res.Conflicts) != 1 {
		t.Fatalf("conflicts = %+v", res.Conflicts)
	}
	want := Conflict{Name: "env", NodeValue: "c", NodePresent: true, BaseValue: "a", BasePresent: true,
		Winner: SideNone, Reason: "changed differently on both sides since the last sync"}
	if res.Conflicts[0] != want {
		t.Errorf("conflict = %+v\nwant %+v", res.Conflicts[0], want)
	}
	one := Merge(CaseInsensitive, MergeInput{Base: set("env", "a"), Cloud: set("env", "a"), Node: set("env", "b"), Direction: CloudToNode})
	if r := one.Conflicts[0].Reason; !strings.Contains(r, "direction CloudToNode does not write the cloud") {
		t.Errorf("one-way reason = %q", r)
	}
	nh := Merge(CaseInsensitive, MergeInput{Cloud: set("env", "a"), Node: set("env", "b")})
	if r := nh.Conflicts[0].Reason; r != "no sync history and the values differ" {
		t.Errorf("no-history reason = %q", r)
	}
}

func TestMergeHold(t *testing.T) {
	in := MergeInput{
		Base:  set("long", "old", "env", "a"),
		Cloud: set("long", strings.Repeat("v", 100), "env", "a"),
		Node:  set("env", "a"), // the label for "long" could not be written
		Hold:  []string{"LONG"},
	}
	res := Merge(CaseInsensitive, in)
	if !res.CloudPatch.IsEmpty() || !res.NodePatch.IsEmpty() || len(res.Conflicts) > 0 {
		t.Errorf("held key was touched: %+v", res)
	}
	if !sameMap(res.NewBase, set("long", "old", "env", "a")) {
		t.Errorf("NewBase = %v, held key must keep its base entry", res.NewBase)
	}
	checkMergeInvariants(t, CaseInsensitive, in, res)
}

func TestMergeCaseCollisionsAreDeterministic(t *testing.T) {
	in := MergeInput{Cloud: set("ENV", "1", "env", "2"), Node: Set{}}
	first := Merge(CaseInsensitive, in)
	for i := 0; i < 20; i++ {
		if again := Merge(CaseInsensitive, in); !samePatch(again.NodePatch, first.NodePatch) {
			t.Fatalf("merge not deterministic: %s vs %s", fmtPatch(again.NodePatch), fmtPatch(first.NodePatch))
		}
	}
	mustEqualPatch(t, "NodePatch", first.NodePatch, sets("ENV", "1"))
}

func TestDirectionPolicySide(t *testing.T) {
	for _, d := range append(directions, "") {
		if d.Validate() != nil {
			t.Errorf("%q should be valid", d)
		}
	}
	for _, p := range append(policies, "") {
		if p.Validate() != nil {
			t.Errorf("%q should be valid", p)
		}
	}
	if Direction("x").Validate() == nil || Policy("x").Validate() == nil {
		t.Error("unknown values should be invalid")
	}
	if Direction("").String() != "TwoWay" || CloudToNode.String() != "CloudToNode" {
		t.Error("Direction.String")
	}
	if SideNone.String() != "none" || SideCloud.String() != "cloud" || SideNode.String() != "node" {
		t.Error("Side.String")
	}
	if SideNone.other() != SideNone {
		t.Error("SideNone.other")
	}
}

// A disappearance crosses over, in TwoWay, only from the side the tag came
// from; the rest is put back (the cloud) or waits for a person (the Node).
func TestMergeDeletionsByIntent(t *testing.T) {
	base := set("env", "a", "team", "x")
	cases := []struct {
		name        string
		cloud, node Set
		from        Sources
		dir         Direction
		cloudPatch  Patch
		nodePatch   Patch
		restored    []string
		unclear     []string
	}{
		{name: "the cloud lost a tag copied up from the Nodes: put back", cloud: set("env", "a"), node: base,
			from: Sources{"env": SideCloud, "team": SideNode}, cloudPatch: sets("team", "x"), restored: []string{"team"}},
		{name: "the cloud lost a tag of unknown source: put back", cloud: set("env", "a"), node: base,
			cloudPatch: sets("team", "x"), restored: []string{"team"}},
		{name: "the cloud lost its own tag: the labels follow", cloud: set("team", "x"), node: base,
			from: Sources{"env": SideCloud, "team": SideNode}, nodePatch: dels("env")},
		{name: "a Node lost the cloud's tag: unclear", cloud: base, node: set("team", "x"),
			from: Sources{"env": SideCloud, "team": SideNode}, cloudPatch: dels("env"), unclear: []string{"env"}},
		{name: "a Node lost a tag of unknown source: unclear", cloud: base, node: set("env", "a"),
			cloudPatch: dels("team"), unclear: []string{"team"}},
		{name: "a Node lost its own tag: deleted", cloud: base, node: set("env", "a"),
			from: Sources{"env": SideCloud, "team": SideNode}, cloudPatch: dels("team")},
		{name: "CloudToNode: the cloud is the source", cloud: set("env", "a"), node: base, dir: CloudToNode, nodePatch: dels("team")},
		{name: "NodeToCloud: the Nodes are the source", cloud: base, node: set("env", "a"), dir: NodeToCloud, cloudPatch: dels("team")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Merge(CaseInsensitive, MergeInput{Base: base, Cloud: c.cloud, Node: c.node, From: c.from, Direction: c.dir})
			mustEqualPatch(t, "CloudPatch", res.CloudPatch, c.cloudPatch)
			mustEqualPatch(t, "NodePatch", res.NodePatch, c.nodePatch)
			if !sameStrings(res.Restored, c.restored) || !sameStrings(res.Unclear, c.unclear) {
				t.Errorf("restored %v unclear %v, want %v and %v", res.Restored, res.Unclear, c.restored, c.unclear)
			}
			if len(res.Conflicts) > 0 {
				t.Errorf("conflicts %+v", res.Conflicts)
			}
		})
	}
}

// A tag copied across for the first time records the side it came from;
// one both sides already held records none; known sources are kept.
func TestMergeRecordsSources(t *testing.T) {
	res := Merge(CaseInsensitive, MergeInput{Base: nil, Cloud: set("c", "1", "both", "x"), Node: set("n", "2", "both", "x")})
	if got := res.From(); !sameMap(sourceText(got), set("c", "cloud", "n", "node")) {
		t.Fatalf("From = %v", got)
	}
	res = Merge(CaseInsensitive, MergeInput{Base: set("both", "x"), Cloud: set("BOTH", "y"), Node: set("both", "x"),
		From: Sources{"both": SideNode}})
	if got := res.From(); !sameMap(sourceText(got), set("BOTH", "node")) {
		t.Fatalf("a changed value keeps its source: From = %v (NewBase %v)", got, res.NewBase)
	}
}

func sourceText(s Sources) Set {
	out := Set{}
	for n, side := range s {
		out[n] = side.String()
	}
	return out
}

// A removal the cloud attributes to a person crosses over, whatever side
// the tag came from.
func TestMergeRemovedByPerson(t *testing.T) {
	in := MergeInput{Base: set("env", "a", "team", "x"), Cloud: set("env", "a"), Node: set("env", "a", "team", "x"),
		From: Sources{"team": SideNode}, RemovedByPerson: true}
	res := Merge(CaseInsensitive, in)
	mustEqualPatch(t, "NodePatch", res.NodePatch, dels("team"))
	mustEqualPatch(t, "CloudPatch", res.CloudPatch, Patch{})
	if len(res.Restored) > 0 {
		t.Fatalf("restored %v", res.Restored)
	}
}
