package tags

import (
	"errors"
	"reflect"
	"testing"
)

func TestContested(t *testing.T) {
	life := func(op Opcode, kv ...string) Lifecycle {
		s := Set{}
		for i := 0; i < len(kv); i += 2 {
			s[kv[i]] = kv[i+1]
		}
		return Lifecycle{Opcode: op, Tags: s}
	}
	cases := []struct {
		name string
		a, b Lifecycle
		want []string
	}{
		{"update/update other values", life(OpUpdate, "env", "a", "team", "x"), life(OpUpdate, "env", "b", "team", "x"), []string{"env"}},
		{"update/update same value", life(OpUpdate, "env", "a"), life(OpUpdate, "env", "a"), nil},
		{"update/add other value", life(OpUpdate, "env", "a"), life(OpAdd, "env", "b"), []string{"env"}},
		{"delete any/update", life(OpDelete, "env", ""), life(OpUpdate, "env", "b"), []string{"env"}},
		{"update/delete its value", life(OpUpdate, "env", "b"), life(OpDelete, "env", "b"), []string{"env"}},
		{"update/delete another value", life(OpUpdate, "env", "b"), life(OpDelete, "env", "c"), nil},
		{"delete/delete", life(OpDelete, "env", ""), life(OpDelete, "env", "b"), nil},
		{"case-insensitive names", life(OpUpdate, "Env", "a"), life(OpUpdate, "env", "b"), []string{"Env"}},
		{"disjoint", life(OpUpdate, "env", "a"), life(OpUpdate, "team", "b"), nil},
	}
	for _, c := range cases {
		if got := c.a.Contested(CaseInsensitive, c.b); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Contested = %v, want %v", c.name, got, c.want)
		}
		if got, back := c.a.Contested(CaseInsensitive, c.b), c.b.Contested(CaseInsensitive, c.a); len(got) != len(back) {
			t.Errorf("%s: not symmetric: %v and %v", c.name, got, back)
		}
	}
	ignoring := life(OpUpdate, "env", "b")
	ignoring.Ignore = []string{"env"}
	if got := life(OpUpdate, "env", "a").Contested(CaseInsensitive, ignoring); got != nil {
		t.Errorf("a name the other ignores is contested: %v", got)
	}
}

func TestYieldLeavesContestedNamesAlone(t *testing.T) {
	l := Lifecycle{Opcode: OpUpdate, Tags: Set{"env": "a", "team": "x"}}
	p := l.Yield(Set{"env": "b"}, AzureRules, nil, []string{"env"})
	if _, ok := p.Patch.Set["env"]; ok || p.Patch.Set["team"] != "x" {
		t.Errorf("patch %v: want team written and env left alone", p.Patch)
	}
	if len(p.Skipped) != 1 || p.Skipped[0].Name != "env" || !errors.Is(p.Skipped[0].Err, ErrContested) {
		t.Errorf("skipped %+v", p.Skipped)
	}
}
