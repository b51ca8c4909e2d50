package tags

import (
	"reflect"
	"testing"
)

func TestSetLookup(t *testing.T) {
	s := Set{"Env": "prod", "team": "a"}
	tests := []struct {
		c                     NameCase
		name, spelling, value string
		ok                    bool
	}{
		{CaseInsensitive, "Env", "Env", "prod", true},
		{CaseInsensitive, "env", "Env", "prod", true},
		{CaseInsensitive, "ENV", "Env", "prod", true},
		{CaseInsensitive, "missing", "", "", false},
		{CaseSensitive, "Env", "Env", "prod", true},
		{CaseSensitive, "env", "", "", false}, // AWS: another tag
		{CaseSensitive, "ENV", "", "", false},
	}
	for _, tt := range tests {
		sp, v, ok := s.Lookup(tt.c, tt.name)
		if sp != tt.spelling || v != tt.value || ok != tt.ok {
			t.Errorf("Lookup(%s, %q) = %q, %q, %v", tt.c, tt.name, sp, v, ok)
		}
		if got, ok := s.Get(tt.c, tt.name); got != tt.value || ok != tt.ok || s.Has(tt.c, tt.name) != tt.ok {
			t.Errorf("Get/Has(%s, %q) = %q, %v", tt.c, tt.name, got, ok)
		}
	}
	if sp, _, _ := (Set{"ENV": "1", "Env": "2"}).Lookup(CaseInsensitive, "env"); sp != "ENV" {
		t.Errorf("collision lookup = %q, want the first spelling", sp)
	}
	if CaseInsensitive.Key("ÉTÉ") != "été" {
		t.Errorf("Key does not lower-case Unicode")
	}
}

func TestSetEqual(t *testing.T) {
	tests := []struct {
		a, b Set
		want bool
	}{
		{nil, Set{}, true},
		{Set{"Env": "a"}, Set{"env": "a"}, true},
		{Set{"env": "a"}, Set{"env": "A"}, false},
		{Set{"env": "a"}, Set{"env": "a", "x": ""}, false},
		{Set{"env": "a"}, Set{"team": "a"}, false},
	}
	for _, tt := range tests {
		if got := tt.a.Equal(CaseInsensitive, tt.b); got != tt.want {
			t.Errorf("%v.Equal(CaseInsensitive, %v) = %v", tt.a, tt.b, got)
		}
	}
}

func TestSetHelpers(t *testing.T) {
	s := Set{"b": "1", "A": "2", "a": "3", "c": ""}
	if got := s.Names(); !reflect.DeepEqual(got, []string{"A", "a", "b", "c"}) {
		t.Errorf("Names = %v", got)
	}
	if got := s.Collisions(CaseInsensitive); !reflect.DeepEqual(got, [][]string{{"A", "a"}}) {
		t.Errorf("Collisions = %v", got)
	}
	if (Set{"x": "1"}).Collisions(CaseInsensitive) != nil {
		t.Error("no collisions expected")
	}
	c := s.Clone()
	c.Put(CaseInsensitive, "B", "9")
	if !reflect.DeepEqual(map[string]string(c), map[string]string{"B": "9", "A": "2", "a": "3", "c": ""}) || s["b"] != "1" {
		t.Errorf("Put/Clone: %v / %v", c, s)
	}
	c.Remove(CaseInsensitive, "A")
	if c.Has(CaseInsensitive, "a") {
		t.Error("Remove must remove every spelling")
	}
	if Set(nil).Clone() != nil || Set(nil).Without(CaseInsensitive, "x") != nil {
		t.Error("nil must stay nil")
	}
	if got := s.Without(CaseInsensitive, "A", "B"); !reflect.DeepEqual(map[string]string(got), map[string]string{"c": ""}) {
		t.Errorf("Without = %v", got)
	}
}

func TestPatch(t *testing.T) {
	p := Patch{Set: Set{"env": "b", "New": "n"}, Delete: []string{"OLD"}}
	got := p.Apply(CaseInsensitive, Set{"Env": "a", "old": "x", "keep": "k"})
	want := Set{"env": "b", "New": "n", "keep": "k"}
	if !reflect.DeepEqual(map[string]string(got), map[string]string(want)) {
		t.Errorf("Apply = %v, want %v", got, want)
	}
	if got := p.Apply(CaseInsensitive, nil); got == nil || len(got) != 2 {
		t.Errorf("Apply(nil) = %v", got)
	}
	if v, del, ok := p.Op(CaseInsensitive, "ENV"); v != "b" || del || !ok {
		t.Errorf("Op(ENV) = %q %v %v", v, del, ok)
	}
	if _, del, ok := p.Op(CaseInsensitive, "old"); !del || !ok {
		t.Errorf("Op(old) = %v %v", del, ok)
	}
	if _, _, ok := p.Op(CaseInsensitive, "none"); ok {
		t.Error("Op(none) should be false")
	}
	if p.IsEmpty() || !(Patch{}).IsEmpty() {
		t.Error("IsEmpty")
	}
}
