package tags

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestLifecyclePlan(t *testing.T) {
	dns := AzureRules
	dns.MaxTags = 15
	heldAll := func(string) bool { return true }
	tests := []struct {
		name        string
		l           Lifecycle
		current     Set
		rules       Rules
		held        func(string) bool
		want        Patch
		wantExpect  Set
		wantSkipped map[string]error // name -> kind
		wantHeld    []string
	}{
		{
			name: "add writes an absent tag", l: Lifecycle{Opcode: OpAdd, Tags: set("env", "prod")},
			current: set("owner", "x"), rules: AzureRules, want: sets("env", "prod"), wantHeld: []string{"env"},
		},
		{
			name: "add finds the same value: nothing to write", l: Lifecycle{Opcode: OpAdd, Tags: set("env", "prod")},
			current: set("env", "prod"), rules: AzureRules, wantHeld: []string{"env"},
		},
		{
			name: "add onto another value fails for that key only", l: Lifecycle{Opcode: OpAdd, Tags: set("env", "prod", "team", "a")},
			current: set("env", "dev"), rules: AzureRules, want: sets("team", "a"),
			wantSkipped: map[string]error{"env": ErrTaken}, wantHeld: []string{"team"},
		},
		{
			name:    "add reverts an outside edit of a tag it owns and held there",
			l:       Lifecycle{Opcode: OpAdd, Tags: set("env", "prod"), Owned: set("env", "prod")},
			current: set("env", "hacked"), rules: AzureRules, held: heldAll, want: sets("env", "prod"), wantHeld: []string{"env"},
		},
		{
			name:    "add does not overwrite an owned name it never held on this resource",
			l:       Lifecycle{Opcode: OpAdd, Tags: set("env", "prod"), Owned: set("env", "prod")},
			current: set("env", "dev"), rules: AzureRules, held: func(string) bool { return false },
			wantSkipped: map[string]error{"env": ErrTaken},
		},
		{
			name: "update overwrites", l: Lifecycle{Opcode: OpUpdate, Tags: set("env", "prod")},
			current: set("env", "dev", "other", "1"), rules: AzureRules, want: sets("env", "prod"), wantHeld: []string{"env"},
		},
		{
			name: "update matches Azure names case-insensitively", l: Lifecycle{Opcode: OpUpdate, Tags: set("env", "prod")},
			current: set("Env", "prod"), rules: AzureRules, wantHeld: []string{"env"},
		},
		{
			name: "AWS names are case-sensitive: env is a new tag beside Env", l: Lifecycle{Opcode: OpUpdate, Tags: set("env", "prod")},
			current: set("Env", "prod"), rules: AWSRules, want: sets("env", "prod"), wantHeld: []string{"env"},
		},
		{
			name:    "delete with a value removes only a matching tag; without one, any value",
			l:       Lifecycle{Opcode: OpDelete, Tags: set("env", "dev", "team", "", "gone", "", "keep", "x")},
			current: set("Env", "dev", "team", "a", "keep", "y"), rules: AzureRules,
			want: dels("Env", "team"), wantExpect: set("Env", "dev", "team", "a"),
		},
		{
			name:    "ignored names are neither read nor written",
			l:       Lifecycle{Opcode: OpUpdate, Tags: set("env", "prod", "cost", "1"), Ignore: []string{"COST"}},
			current: set("cost", "9"), rules: AzureRules, want: sets("env", "prod"), wantHeld: []string{"env"},
		},
		{
			name: "ignored delete is not done", l: Lifecycle{Opcode: OpDelete, Tags: set("cost", ""), Ignore: []string{"cost"}},
			current: set("cost", "9"), rules: AzureRules,
		},
		{
			name:    "partial adds new names in name order while there is room (15-tag DNS zone)",
			l:       Lifecycle{Opcode: OpUpdate, Tags: set("c", "3", "a", "1", "b", "2", "t00", "new"), Limit: LimitPartial},
			current: fullSet(13), rules: dns, want: sets("a", "1", "b", "2", "t00", "new"),
			wantSkipped: map[string]error{"c": ErrTooManyTags}, wantHeld: []string{"a", "b", "t00"},
		},
		{
			name:    "strict writes nothing to a resource that cannot take all",
			l:       Lifecycle{Opcode: OpUpdate, Tags: set("c", "3", "a", "1", "b", "2", "t00", "new"), Limit: LimitStrict},
			current: fullSet(13), rules: dns,
			wantSkipped: map[string]error{"a": ErrTooManyTags, "b": ErrTooManyTags, "c": ErrTooManyTags, "t00": ErrTooManyTags},
		},
		{
			name: "strict writes all when all fit", l: Lifecycle{Opcode: OpUpdate, Tags: set("a", "1", "b", "2"), Limit: LimitStrict},
			current: fullSet(13), rules: dns, want: sets("a", "1", "b", "2"), wantHeld: []string{"a", "b"},
		},
		{
			name:    "ignored tags still count against the limit",
			l:       Lifecycle{Opcode: OpUpdate, Tags: set("a", "1"), Ignore: []string{"t00"}},
			current: fullSet(15), rules: dns, wantSkipped: map[string]error{"a": ErrTooManyTags},
		},
		{
			name:    "a name the resource's rules refuse is skipped (storage accounts: 128 characters)",
			l:       Lifecycle{Opcode: OpUpdate, Tags: set(strings.Repeat("n", 129), "v", "ok", "1")},
			current: Set{}, rules: AzureStorageRules, want: sets("ok", "1"),
			wantSkipped: map[string]error{strings.Repeat("n", 129): ErrTooLong}, wantHeld: []string{"ok"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.l.Plan(tt.current, tt.rules, tt.held)
			if !samePatch(got.Patch, tt.want) {
				t.Errorf("patch = %+v, want %+v", got.Patch, tt.want)
			}
			if !sameMap(got.Expect, tt.wantExpect) {
				t.Errorf("expect = %v, want %v", got.Expect, tt.wantExpect)
			}
			if len(got.Skipped) != len(tt.wantSkipped) {
				t.Errorf("skipped = %+v, want %v", got.Skipped, tt.wantSkipped)
			}
			for _, sk := range got.Skipped {
				if kind, ok := tt.wantSkipped[sk.Name]; !ok || !errors.Is(sk.Err, kind) {
					t.Errorf("skipped %q (%v), want kinds %v", sk.Name, sk.Err, tt.wantSkipped)
				}
			}
			if !reflect.DeepEqual(got.Held, tt.wantHeld) {
				t.Errorf("held = %v, want %v", got.Held, tt.wantHeld)
			}
			if got.InSync() != (tt.want.IsEmpty() && len(tt.wantSkipped) == 0) {
				t.Errorf("InSync = %v", got.InSync())
			}
		})
	}
}

// TestLifecyclePlanIsStable checks that applying a plan and planning again
// writes nothing: a second pass over an unchanged resource is free.
func TestLifecyclePlanIsStable(t *testing.T) {
	for _, op := range []Opcode{OpAdd, OpUpdate, OpDelete} {
		for _, limit := range []LimitPolicy{LimitPartial, LimitStrict} {
			l := Lifecycle{Opcode: op, Tags: set("a", "1", "b", "", "c", "3", "d", "4"), Limit: limit, Ignore: []string{"x"}}
			current := fullSet(12)
			current["b"], current["x"] = "old", "i"
			rules := AzureRules
			rules.MaxTags = 15
			first := l.Plan(current, rules, nil)
			after := first.Patch.Apply(rules.NameCase(), current)
			if second := l.Plan(after, rules, nil); !second.Patch.IsEmpty() {
				t.Errorf("%s/%s: second plan writes %v", op, limit, second.Patch)
			}
		}
	}
}
