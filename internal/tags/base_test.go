package tags

import (
	"maps"
	"strings"
	"testing"
)

func TestBaseRoundTripsWithItsOrigin(t *testing.T) {
	b := Base{Origin: Origin{Sync: "uid-1", Prefix: "azure.tags", Direction: TwoWay, Provider: "azure"},
		Tags: Set{"env": "prod", "Cost Center": "1"}, Former: &Former{Prefix: "old.tags", Tags: Set{"env": "prod"}}}
	text := b.Encode()
	got, err := ParseBase(text)
	if err != nil {
		t.Fatal(err)
	}
	if got.Legacy || got.Origin != b.Origin || !maps.Equal(got.Tags, b.Tags) || got.Former == nil ||
		got.Former.Prefix != "old.tags" || !maps.Equal(got.Former.Tags, b.Former.Tags) {
		t.Fatalf("ParseBase(%s) = %+v, want %+v", text, got, b)
	}
	if again := got.Encode(); again != text {
		t.Fatalf("re-encoded %s, first %s", again, text)
	}
}

func TestParseBaseReadsTheLegacyFormat(t *testing.T) {
	for _, text := range []string{`{"env":"prod","v":"x"}`, `{}`} {
		got, err := ParseBase(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if !got.Legacy || got.Origin != (Origin{}) {
			t.Fatalf("%s read as %+v, want a legacy base", text, got)
		}
	}
}

func TestParseBaseRefuses(t *testing.T) {
	for text, want := range map[string]string{
		`[]`:                "not a JSON object",
		`{"env":1}`:         "JSON object of strings",
		`{"v":4,"tags":{}}`: "version 4",
		`{"v":3,"tags":{"a":"1"},"from":{"a":"elsewhere"}}`: "want cloud or node",
		`{"v":2,"sync":"a"}`:     `needs "tags"`,
		`{"v":2,"tags":{"a":1}}`: "not a version 2 base",
	} {
		if _, err := ParseBase(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseBase(%s) = %v, want an error with %q", text, err, want)
		}
	}
}

func TestBaseForAnotherConfigurationIsNoBase(t *testing.T) {
	made := Origin{Sync: "uid-1", Prefix: "azure.tags", Direction: TwoWay, Provider: "azure", Resource: "/vmss/pool"}
	stored := Set{"env": "prod", "team": "blue"}
	cloud := Set{"env": "prod", "team": "blue"}
	for name, o := range map[string]Origin{
		"prefix":    {Sync: "uid-1", Prefix: "corp.tags", Direction: TwoWay, Provider: "azure", Resource: "/vmss/pool"},
		"re-create": {Sync: "uid-2", Prefix: "azure.tags", Direction: TwoWay, Provider: "azure", Resource: "/vmss/pool"},
		"direction": {Sync: "uid-1", Prefix: "azure.tags", Direction: CloudToNode, Provider: "azure", Resource: "/vmss/pool"},
		"provider":  {Sync: "uid-1", Prefix: "azure.tags", Direction: TwoWay, Provider: "aws", Resource: "/vmss/pool"},
		"resource":  {Sync: "uid-1", Prefix: "azure.tags", Direction: TwoWay, Provider: "azure", Resource: "/vmss/pool/vm/0"},
	} {
		base, same := Base{Origin: made, Tags: stored}.For(o, CaseInsensitive, cloud, Set{})
		if same || base != nil {
			t.Errorf("%s: base %v (same %v), want none", name, base, same)
		}
		// As the merge then sees it: labels proposed, no cloud deletion.
		res := Merge(CaseInsensitive, MergeInput{Base: base, Cloud: cloud, Node: Set{}, Direction: o.Direction})
		if len(res.CloudPatch.Delete) > 0 {
			t.Errorf("%s: the merge deletes %v from the cloud", name, res.CloudPatch.Delete)
		}
	}
	base, same := Base{Origin: made, Tags: stored}.For(Origin{Sync: "uid-1", Prefix: "azure.tags", Provider: "azure", Resource: "/VMSS/Pool"},
		CaseInsensitive, cloud, Set{})
	if !same || !maps.Equal(base, stored) {
		t.Errorf("same origin (empty direction = TwoWay, resource in any case): base %v same %v, want the stored base", base, same)
	}
}

// A version 2 base recorded no resource: read by the same sync, it keeps
// only what both sides hold, as a legacy base does.
func TestVersion2BaseKeepsWhatBothSidesHold(t *testing.T) {
	b, err := ParseBase(`{"v":2,"sync":"u","prefix":"p","direction":"TwoWay","provider":"azure","tags":{"env":"prod","team":"blue"}}`)
	if err != nil || b.Origin.Resource != "" || b.Legacy {
		t.Fatalf("ParseBase: %+v, %v", b, err)
	}
	o := Origin{Sync: "u", Prefix: "p", Direction: TwoWay, Provider: "azure", Resource: "/vmss/pool"}
	base, same := b.For(o, CaseInsensitive, Set{"env": "prod"}, Set{"env": "prod", "team": "blue"})
	if same || !maps.Equal(base, Set{"env": "prod"}) {
		t.Fatalf("base %v same %v, want only env", base, same)
	}
	if other, _ := b.For(Origin{Sync: "v", Prefix: "p", Provider: "azure", Resource: "/vmss/pool"}, CaseInsensitive, Set{"env": "prod"}, Set{"env": "prod"}); other != nil {
		t.Fatalf("another sync's version 2 base read as %v", other)
	}
}

func TestSourcesRoundTripAndCombine(t *testing.T) {
	b := Base{Origin: Origin{Sync: "u", Resource: "/r"}, Tags: Set{"env": "prod", "team": "blue", "x": "1"},
		From: Sources{"env": SideCloud, "team": SideNode}}
	got, err := ParseBase(b.Encode())
	if err != nil || !maps.Equal(got.From, b.From) || got.Origin != b.Origin {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if got.From.Source(CaseInsensitive, "TEAM") != SideNode || got.From.Source(CaseSensitive, "TEAM") != SideNone {
		t.Fatal("Source matches names as the cloud does")
	}
	c := Combine(CaseInsensitive, Sources{"env": SideCloud, "team": SideNode}, Sources{"Team": SideNode, "cost": SideCloud},
		Sources{"env": SideNode}, nil)
	if !maps.Equal(c, Sources{"team": SideNode, "cost": SideCloud}) {
		t.Fatalf("Combine = %v: env is unclear (the Nodes disagree), the rest agree", c)
	}
}

func TestLegacyBaseNeverDeletes(t *testing.T) {
	legacy := Base{Tags: Set{"env": "prod", "team": "blue", "cost": "1"}, Legacy: true}
	cloud := Set{"env": "staging", "team": "blue"} // cost gone from the cloud
	node := Set{"env": "prod", "cost": "1"}        // team gone from the node
	base, same := legacy.For(Origin{Sync: "u", Prefix: "p"}, CaseInsensitive, cloud, node)
	if same || !maps.Equal(base, Set{"env": "prod"}) {
		t.Fatalf("legacy base as %v (same %v), want only env, which both sides hold", base, same)
	}
	res := Merge(CaseInsensitive, MergeInput{Base: base, Cloud: cloud, Node: node})
	if len(res.CloudPatch.Delete) > 0 || len(res.NodePatch.Delete) > 0 {
		t.Fatalf("a legacy base led to deletions: cloud %v node %v", res.CloudPatch.Delete, res.NodePatch.Delete)
	}
	if res.NodePatch.Set["env"] != "staging" {
		t.Fatalf("the cloud's change of env did not propagate: %+v", res.NodePatch)
	}
}
