package tags

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCodecValidate(t *testing.T) {
	tests := []struct {
		prefix string
		ok     bool
	}{
		{"", true},
		{DefaultPrefix, true},
		{"tags.example.com", true},
		{"node-restriction.kubernetes.io", false},
		{"kubernetes.io", false},
		{"k8s.io", false},
		{"Azure.Tags", false},
		{"azure_tags", false},
		{strings.Repeat("a", 254), false},
	}
	for _, tt := range tests {
		err := Codec{Prefix: tt.prefix, Rules: &AzureRules}.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("Validate(%q) = %v, want ok=%v", tt.prefix, err, tt.ok)
		}
	}
}

func TestLabelKeyAndTagName(t *testing.T) {
	c := Codec{Prefix: DefaultPrefix, Rules: &AzureRules}
	key, err := c.LabelKey("Cost Center")
	if err != nil || key != "azure.tags/Costx_20Center" {
		t.Fatalf("LabelKey = %q, %v", key, err)
	}
	if _, err := c.LabelKey(strings.Repeat("a", 64)); !errors.Is(err, ErrUnrepresentable) {
		t.Errorf("LabelKey(64 chars) error = %v", err)
	}
	if _, err := (Codec{Prefix: "Bad_Prefix", Rules: &AzureRules}).LabelKey("env"); !errors.Is(err, ErrUnrepresentable) {
		t.Errorf("LabelKey with bad prefix error = %v", err)
	}
	tests := []struct {
		codec   Codec
		key     string
		name    string
		managed bool
		err     bool
	}{
		{c, "azure.tags/Costx_20Center", "Cost Center", true, false},
		{c, "azure.tags/x_41", "", true, true},
		{c, "other.io/env", "", false, false},
		{c, "env", "", false, false},
		{c, "azure.tagsx/env", "", false, false},
		{Codec{Rules: &AzureRules}, "env", "env", true, false},
		{Codec{Rules: &AzureRules}, "azure.tags/env", "", false, false},
		{Codec{Rules: &AzureRules}, "x_41", "", true, true},
	}
	for _, tt := range tests {
		name, managed, err := tt.codec.TagName(tt.key)
		if name != tt.name || managed != tt.managed || (err != nil) != tt.err {
			t.Errorf("%+v.TagName(%q) = %q, %v, %v", tt.codec, tt.key, name, managed, err)
		}
		if tt.err && !errors.Is(err, ErrUndecodable) {
			t.Errorf("TagName(%q) error %v does not wrap ErrUndecodable", tt.key, err)
		}
		if tt.codec.IsManaged(tt.key) != tt.managed {
			t.Errorf("IsManaged(%q) != %v", tt.key, tt.managed)
		}
	}
}

func TestToLabels(t *testing.T) {
	c := Codec{Prefix: DefaultPrefix, Rules: &AzureRules}
	in := Set{
		"env":           "prod",
		"Cost Center":   "CC 1234",
		"owner":         "",
		"microsoftTeam": "x",                     // reserved
		"long":          strings.Repeat("v", 64), // value too long for a label
		"a/b":           "forbidden",             // forbidden character
		"Team":          "a", "team": "b",        // case collision
		"url":                   "https://example.com/a?b", // value with : / ?
		strings.Repeat("n", 70): "v",                       // name too long for a label
	}
	labels, skipped := c.ToLabels(in)
	want := map[string]string{
		"azure.tags/env":            "prod",
		"azure.tags/Costx_20Center": "CCx_201234",
		"azure.tags/owner":          "",
		"azure.tags/url":            "httpsx_3ax_2fx_2fexample.comx_2fax_3fb",
	}
	if !reflect.DeepEqual(labels, want) {
		t.Errorf("labels = %v\nwant %v", labels, want)
	}
	wantSkipped := []string{"Team", "a/b", "long", "microsoftTeam", strings.Repeat("n", 70), "team"}
	if got := SkippedNames(skipped); !reflect.DeepEqual(got, wantSkipped) {
		t.Errorf("skipped = %v, want %v", got, wantSkipped)
	}
	for _, s := range skipped {
		if s.Reason == "" || s.Err == nil {
			t.Errorf("skipped %+v has no reason", s)
		}
	}
	back, sk := c.FromLabels(labels)
	if len(sk) != 0 || !back.Equal(CaseInsensitive, in.Without(CaseInsensitive, wantSkipped...)) {
		t.Errorf("FromLabels(ToLabels) = %v, %v", back, sk)
	}
}

func TestFromLabels(t *testing.T) {
	c := Codec{Prefix: DefaultPrefix, Rules: &AzureRules}
	labels := map[string]string{
		"azure.tags/env":                   "prod",
		"azure.tags/Team":                  "a",
		"azure.tags/team":                  "b",    // collides with Team
		"azure.tags/x_41":                  "v",    // name not produced by the codec
		"azure.tags/good":                  "x_41", // value not produced by the codec
		"azure.tags/azureThing":            "v",    // reserved tag name
		"azure.tags/ax_2fb":                "v",    // decodes to a forbidden name
		"kubernetes.azure.com/agentpool":   "pool1",
		"env":                              "unprefixed",
		"node.kubernetes.io/instance-type": "x",
	}
	set, skipped := c.FromLabels(labels)
	if !set.Equal(CaseInsensitive, Set{"env": "prod"}) {
		t.Errorf("set = %v", set)
	}
	var got []string
	for _, s := range skipped {
		got = append(got, s.Label)
	}
	want := []string{"azure.tags/x_41", "azure.tags/Team", "azure.tags/ax_2fb", "azure.tags/azureThing", "azure.tags/good", "azure.tags/team"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("skipped labels = %v\nwant %v", got, want)
	}
	for _, s := range skipped {
		if s.Label == "azure.tags/team" && !errors.Is(s.Err, ErrDuplicateName) {
			t.Errorf("collision skip has Err %v", s.Err)
		}
		if s.Label == "azure.tags/good" && s.Name != "good" {
			t.Errorf("undecodable value skip should name the tag: %+v", s)
		}
	}
	if names := SkippedNames(skipped); !reflect.DeepEqual(names, []string{"Team", "a/b", "azureThing", "good", "team"}) {
		t.Errorf("SkippedNames = %v", names)
	}
}

func TestFromLabelsEmptyPrefix(t *testing.T) {
	set, skipped := Codec{Rules: &AzureRules}.FromLabels(map[string]string{"env": "prod", "azure.tags/x": "y", "Costx_20Center": ""})
	if len(skipped) != 0 || !set.Equal(CaseInsensitive, Set{"env": "prod", "Cost Center": ""}) {
		t.Errorf("got %v, %v", set, skipped)
	}
}

func TestCustomRules(t *testing.T) {
	r := Rules{ReservedPrefixes: []string{"aws:"}}
	c := Codec{Prefix: "ec2.tags", Rules: &r}
	if err := c.Check("azure-thing", "v"); err != nil {
		t.Errorf("custom rules: %v", err)
	}
	if err := c.Check("AWS:x", "v"); !errors.Is(err, ErrReservedName) {
		t.Errorf("custom reserved: %v", err)
	}
}

func TestLabelChanges(t *testing.T) {
	c := Codec{Prefix: DefaultPrefix, Rules: &AzureRules}
	labels := map[string]string{
		"azure.tags/Env":  "prod",
		"azure.tags/team": "a",
		"azure.tags/old":  "x",
		"azure.tags/same": "v",
		"azure.tags/x_41": "junk", // undecodable: never touched
		"other.io/old":    "x",    // unmanaged: never touched
	}
	p := NodePatch{
		Set:    Set{"env": "prod", "team": "b", "Cost Center": "x y", "same": "v", "big": strings.Repeat("v", 64)},
		Delete: []string{"OLD", "missing"},
	}
	got, skipped := c.LabelChanges(labels, p)
	want := LabelChanges{
		Set: map[string]string{
			"azure.tags/env":            "prod",
			"azure.tags/team":           "b",
			"azure.tags/Costx_20Center": "xx_20y",
		},
		Delete: []string{"azure.tags/Env", "azure.tags/old"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LabelChanges = %+v\nwant %+v", got, want)
	}
	if len(skipped) != 1 || skipped[0].Name != "big" || !errors.Is(skipped[0].Err, ErrUnrepresentable) {
		t.Errorf("skipped = %+v", skipped)
	}
	if none, _ := c.LabelChanges(labels, NodePatch{}); !none.IsEmpty() {
		t.Errorf("empty patch gave %+v", none)
	}
}
