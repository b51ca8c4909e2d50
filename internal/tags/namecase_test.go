package tags

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The tests in this file show that under AWS's rules (CaseSensitive) "Env"
// and "env" are two tags everywhere names are compared, while Azure's rules
// (CaseInsensitive) keep taking them for one.

func TestRulesNameCase(t *testing.T) {
	if AzureRules.NameCase() != CaseInsensitive || AzureStorageRules.NameCase() != CaseInsensitive {
		t.Error("Azure tag names are case-insensitive")
	}
	if AWSRules.NameCase() != CaseSensitive || (Rules{}).NameCase() != CaseSensitive {
		t.Error("AWS tag keys (and the zero Rules) are case-sensitive")
	}
	if CaseSensitive.Key("Env") != "Env" || CaseInsensitive.Key("Env") != "env" {
		t.Error("Key")
	}
	if CaseSensitive.String() != "CaseSensitive" || CaseInsensitive.String() != "CaseInsensitive" {
		t.Error("String")
	}
}

func TestSetCaseSensitive(t *testing.T) {
	s := Set{"Env": "prod", "env": "dev"}
	if sp, v, _ := s.Lookup(CaseSensitive, "env"); sp != "env" || v != "dev" {
		t.Errorf("Lookup(CaseSensitive, env) = %q, %q", sp, v)
	}
	if s.Collisions(CaseSensitive) != nil || s.Collisions(CaseInsensitive) == nil {
		t.Error("Env and env collide only when names are case-insensitive")
	}
	if (Set{"Env": "a"}).Equal(CaseSensitive, Set{"env": "a"}) || !(Set{"Env": "a"}).Equal(CaseInsensitive, Set{"env": "a"}) {
		t.Error("Equal must follow the NameCase")
	}
	c := s.Clone()
	c.Put(CaseSensitive, "ENV", "x")
	c.Remove(CaseSensitive, "env")
	if want := (Set{"Env": "prod", "ENV": "x"}); !reflect.DeepEqual(c, want) {
		t.Errorf("Put/Remove = %v, want %v", c, want)
	}
	if got := s.Without(CaseSensitive, "ENV", "env"); !reflect.DeepEqual(got, Set{"Env": "prod"}) {
		t.Errorf("Without = %v", got)
	}
	p := Patch{Set: Set{"ENV": "x"}, Delete: []string{"env"}}
	if got := p.Apply(CaseSensitive, s); !reflect.DeepEqual(got, Set{"Env": "prod", "ENV": "x"}) {
		t.Errorf("Apply = %v", got)
	}
	if _, _, ok := p.Op(CaseSensitive, "Env"); ok {
		t.Error("Op(CaseSensitive, Env) must not see ENV or env")
	}
	if v, del, ok := p.Op(CaseInsensitive, "Env"); !ok || del || v != "x" {
		t.Errorf("Op(CaseInsensitive, Env) = %q %v %v", v, del, ok)
	}
}

// caseSensitiveScenarios hold names differing only in case, which AWS takes
// for different tags: no renames, and never a conflict between them.
var caseSensitiveScenarios = []scenario{
	{
		name: "cloud renames Env to env: a deletion and an addition", base: set(k, "1", "Env", "a"), cloud: set(k, "1", "env", "a"), from: fromCloud("Env"),
		node: set(k, "1", "Env", "a"),
		want: map[string]outcome{
			"*":                    {node: sets("env", "a").and(dels("Env")), base: set(k, "1", "env", "a")},
			"NodeToCloud":          {conflicts: []string{"Env:none"}, base: set(k, "1", "Env", "a")},
			"NodeToCloud/NodeWins": {cloud: sets("Env", "a"), conflicts: []string{"Env:node"}, base: set(k, "1", "Env", "a")},
		},
	},
	{
		name: "node replaces Env by ENV", base: set("Env", "a"), cloud: set("Env", "a"), node: set("ENV", "b"),
		want: map[string]outcome{
			"*":                     {cloud: sets("ENV", "b").and(dels("Env")), base: set("ENV", "b")},
			"CloudToNode":           {conflicts: []string{"Env:none"}, base: set("Env", "a")},
			"CloudToNode/CloudWins": {node: sets("Env", "a"), conflicts: []string{"Env:cloud"}, base: set("Env", "a")},
		},
	},
	{
		name: "no history: Env and env are both kept", base: nil, cloud: set("Env", "a"), node: set("env", "b"),
		want: map[string]outcome{
			"TwoWay":      {cloud: sets("env", "b"), node: sets("Env", "a"), base: set("Env", "a", "env", "b")},
			"CloudToNode": {node: sets("Env", "a"), base: set("Env", "a")},
			"NodeToCloud": {cloud: sets("env", "b"), base: set("env", "b")},
		},
	},
}

func TestMergeMatrixCaseSensitive(t *testing.T) {
	runMergeMatrix(t, CaseSensitive, caseSensitiveScenarios)
	// Scenarios whose names never differ only in case mean the same either way.
	var same []scenario
	for _, sc := range scenarios {
		if len(unionOf(sc.base, sc.cloud, sc.node).Collisions(CaseInsensitive)) == 0 {
			same = append(same, sc)
		}
	}
	if len(same) < len(scenarios)-2 {
		t.Fatalf("only %d of %d scenarios are free of case variants", len(same), len(scenarios))
	}
	runMergeMatrix(t, CaseSensitive, same)
}

// unionOf returns every name of the sets (values of later sets win).
func unionOf(sets ...Set) Set {
	out := Set{}
	for _, s := range sets {
		for n, v := range s {
			out[n] = v
		}
	}
	return out
}

func TestMergeCaseSensitiveHoldAndRestrict(t *testing.T) {
	in := MergeInput{Base: set("Env", "a", "env", "a"), Cloud: set("Env", "b", "env", "b"), Node: set("Env", "a", "env", "a"), Hold: []string{"env"}}
	res := Merge(CaseSensitive, in)
	mustEqualPatch(t, "NodePatch", res.NodePatch, sets("Env", "b"))
	if !sameMap(res.NewBase, set("Env", "b", "env", "a")) {
		t.Errorf("NewBase = %v: only env is held", res.NewBase)
	}
	checkMergeInvariants(t, CaseSensitive, in, res)
	// ENV is not the Env that was proposed, so nothing counts as written.
	got := res.RestrictNode(sets("ENV", "b"))
	if !got.NodePatch.IsEmpty() || !sameMap(got.NewBase, set("Env", "a", "env", "a")) {
		t.Errorf("RestrictNode(ENV) = %s, base %v", fmtPatch(got.NodePatch), got.NewBase)
	}
}

func TestAggregateCaseSensitive(t *testing.T) {
	cloud := set("Env", "prod")
	proposals := []NodeProposal{
		{Node: "n1", Patch: sets("Env", "a")},
		{Node: "n2", Patch: sets("env", "b")},
	}
	got := Aggregate(CaseSensitive, cloud, proposals)
	mustEqualPatch(t, "Patch", got.Patch, sets("Env", "a", "env", "b"))
	if len(got.Conflicts) != 0 {
		t.Errorf("conflicts = %+v: Env and env are two tags", got.Conflicts)
	}
	if azure := Aggregate(CaseInsensitive, cloud, proposals); len(azure.Conflicts) != 1 || !azure.Patch.IsEmpty() {
		t.Errorf("case-insensitive: %+v, want one conflict", azure)
	}
	// Deleting env leaves Env alone, and is dropped when the cloud has no env.
	if got := Aggregate(CaseSensitive, cloud, []NodeProposal{{Node: "n1", Patch: dels("env")}}); !got.Patch.IsEmpty() {
		t.Errorf("delete of an absent tag: %s", fmtPatch(got.Patch))
	}
}

func TestFitAWS(t *testing.T) {
	full := fullSet(49)
	full["Env"] = "a"
	tests := []struct {
		name        string
		current     Set
		patch       Patch
		want        Patch
		wantSkipped []string
	}{
		{
			name: "env is a new tag, not an update of Env", current: full, patch: sets("env", "b", "Env", "c"),
			want: sets("Env", "c"), wantSkipped: []string{"env"},
		},
		{
			name: "deleting env leaves Env", current: set("Env", "a"), patch: dels("env"),
		},
		{
			name: "set Env and delete env are two operations", current: set("Env", "a", "env", "b"), patch: sets("Env", "x").and(dels("env")),
			want: sets("Env", "x").and(dels("env")),
		},
		{
			name: "reserved in any case, characters AWS refuses", current: Set{}, patch: sets("AWS:x", "1", "a,b", "2", "ok", "a?b", "fine", "a b+c=d.e_f:g/h@i"),
			want: sets("fine", "a b+c=d.e_f:g/h@i"), wantSkipped: []string{"AWS:x", "a,b", "ok"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, skipped := Fit(tt.current, tt.patch, AWSRules)
			mustEqualPatch(t, "Fit", got, tt.want)
			if names := SkippedNames(skipped); !sameStrings(names, tt.wantSkipped) {
				t.Errorf("skipped = %v, want %v", names, tt.wantSkipped)
			}
		})
	}
}

func TestFilterCaseSensitive(t *testing.T) {
	f := Filter{Include: []string{"env", "cost*"}, Exclude: []string{"Secret*"}}
	tests := []struct {
		tag        string
		aws, azure bool
	}{
		{"env", true, true},
		{"Env", false, true},
		{"cost-center", true, true},
		{"Cost-Center", false, true},
		{"costSecret", true, true},
	}
	for _, tt := range tests {
		if got := f.Match(CaseSensitive, tt.tag); got != tt.aws {
			t.Errorf("Match(CaseSensitive, %q) = %v", tt.tag, got)
		}
		if got := f.Match(CaseInsensitive, tt.tag); got != tt.azure {
			t.Errorf("Match(CaseInsensitive, %q) = %v", tt.tag, got)
		}
	}
	if got := (Filter{Exclude: []string{"Secret*"}}).Apply(CaseSensitive, Set{"Secret1": "x", "secret2": "y"}); !reflect.DeepEqual(got, Set{"secret2": "y"}) {
		t.Errorf("Apply = %v", got)
	}
	both := Filter{Include: []string{"env"}, Exclude: []string{"ENV"}}
	if both.ExcludesEverything(CaseSensitive) || !both.ExcludesEverything(CaseInsensitive) {
		t.Error("include env, exclude ENV excludes everything only when names are case-insensitive")
	}
	if !both.Match(CaseSensitive, "env") {
		t.Error("ExcludesEverything(CaseSensitive) said false, and env does pass")
	}
}

func TestValidateAWS(t *testing.T) {
	checkNames(t, AWSRules, []errCase{
		{"Env", nil},
		{"Cost Center", nil},
		{"a+b-c=d.e_f:g/h@i", nil},
		{"日本", nil},
		{"a,b", ErrForbiddenChar},
		{"50%", ErrForbiddenChar},
		{"what?", ErrForbiddenChar},
		{"tab\there", ErrForbiddenChar},
		{"🙂", ErrForbiddenChar},
		{"aws:cloudformation:stack-name", ErrReservedName},
		{"AWS:x", ErrReservedName},
		{"Aws:x", ErrReservedName},
		{"my-aws:x", nil},
		{"azure-thing", nil},
		{strings.Repeat("n", 128), nil},
		{strings.Repeat("n", 129), ErrTooLong},
		{strings.Repeat("𝒜", 128), nil}, // 128 characters, 256 UTF-16 units
		{strings.Repeat("𝒜", 129), ErrTooLong},
	})
	checkValues(t, AWSRules, []errCase{
		{"", nil},
		{"a b+c=d.e_f:g/h@i", nil},
		{"a?b", ErrForbiddenChar},
		{strings.Repeat("é", 256), nil},
		{strings.Repeat("é", 257), ErrTooLong},
	})
	if err := AWSRules.ValidateSet(Set{"Env": "a", "env": "b"}); err != nil {
		t.Errorf("Env and env are two valid AWS tags: %v", err)
	}
	if err := AzureRules.ValidateSet(Set{"Env": "a", "env": "b"}); !errors.Is(err, ErrDuplicateName) {
		t.Errorf("Azure must refuse Env next to env: %v", err)
	}
	fifty := fullSet(49)
	fifty["T00"] = "v" // t00 and T00: two AWS tags, one Azure tag
	if err := AWSRules.ValidateSet(fifty); err != nil {
		t.Errorf("50 tags: %v", err)
	}
	fifty["T01"] = "v"
	if err := AWSRules.ValidateSet(fifty); !errors.Is(err, ErrTooManyTags) || errors.Is(err, ErrDuplicateName) {
		t.Errorf("51 tags: %v", err)
	}
}

func TestCodecAWS(t *testing.T) {
	c := Codec{Prefix: "ec2.tags", Rules: &AWSRules}
	in := Set{"Env": "a", "env": "b"}
	labels, skipped := c.ToLabels(in)
	if want := map[string]string{"ec2.tags/Env": "a", "ec2.tags/env": "b"}; len(skipped) != 0 || !reflect.DeepEqual(labels, want) {
		t.Errorf("ToLabels = %v, %v", labels, skipped)
	}
	back, skipped := c.FromLabels(labels)
	if len(skipped) != 0 || !reflect.DeepEqual(back, in) {
		t.Errorf("FromLabels = %v, %v", back, skipped)
	}
	if _, skipped := (Codec{Prefix: "ec2.tags", Rules: &AzureRules}).FromLabels(labels); len(skipped) != 2 {
		t.Errorf("Azure rules: skipped = %v, want both labels", skipped)
	}
	// Setting env adds a label next to Env; under Azure's rules it renames it.
	got, _ := c.LabelChanges(map[string]string{"ec2.tags/Env": "a"}, sets("env", "b"))
	if want := (LabelChanges{Set: map[string]string{"ec2.tags/env": "b"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("LabelChanges = %+v, want %+v", got, want)
	}
	azure, _ := Codec{Prefix: "ec2.tags", Rules: &AzureRules}.LabelChanges(map[string]string{"ec2.tags/Env": "a"}, sets("env", "b"))
	if !reflect.DeepEqual(azure.Delete, []string{"ec2.tags/Env"}) {
		t.Errorf("Azure LabelChanges = %+v, want a rename", azure)
	}
}

func TestTaintTagsCaseSensitive(t *testing.T) {
	if IsTaintTag(CaseSensitive, "Taint:gpu") || !IsTaintTag(CaseSensitive, "taint:gpu") {
		t.Error("IsTaintTag(CaseSensitive) must match the prefix exactly")
	}
	rest, taints := SplitTaintTags(CaseSensitive, Set{"Taint:x": "user", "taint:gpu": ":NoSchedule"})
	if !reflect.DeepEqual(rest, Set{"Taint:x": "user"}) || !reflect.DeepEqual(taints, Set{"taint:gpu": ":NoSchedule"}) {
		t.Errorf("split = %v / %v", rest, taints)
	}
}
