package tags

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tagsync/tagsync/internal/tags/tagstest"
)

// fullSet returns n tags t00..t(n-1).
func fullSet(n int) Set { return Set(tagstest.Numbered("t", n)) }

func TestFit(t *testing.T) {
	small := Rules{MaxTags: 3, MaxNameLen: 512, MaxValueLen: 256, ForbiddenNameChars: "/", ReservedPrefixes: []string{"azure"}, CaseInsensitive: true}
	tests := []struct {
		name        string
		current     Set
		patch       Patch
		rules       Rules
		want        Patch
		wantSkipped []string
	}{
		{
			name: "fits", current: set("a", "1"), patch: sets("b", "2"), rules: small,
			want: sets("b", "2"),
		},
		{
			name: "adds in name order until the limit", current: set("a", "1"), patch: sets("d", "4", "c", "3", "b", "2"), rules: small,
			want: sets("b", "2", "c", "3"), wantSkipped: []string{"d"},
		},
		{
			name: "deletions make room", current: set("a", "1", "b", "2", "c", "3"), patch: sets("z", "9").and(dels("A")), rules: small,
			want: sets("z", "9").and(dels("a")),
		},
		{
			name: "updates always fit", current: set("a", "1", "b", "2", "c", "3"), patch: sets("B", "9"), rules: small,
			want: sets("B", "9"),
		},
		{
			name: "no-ops dropped", current: set("a", "1"), patch: sets("A", "1").and(dels("missing")), rules: small,
		},
		{
			name: "reserved and invalid skipped", current: set("azureX", "1"), patch: sets("azureY", "1", "a/b", "2", "ok", "3").and(dels("azureX")),
			rules: small, want: sets("ok", "3"), wantSkipped: []string{"a/b", "azureX", "azureY"},
		},
		{
			name: "value too long", current: Set{}, patch: sets("x", string(make([]byte, 300))), rules: AzureRules,
			wantSkipped: []string{"x"},
		},
		{
			name: "set and delete of one tag", current: set("a", "1"), patch: sets("a", "2").and(dels("A")), rules: small,
			wantSkipped: []string{"A", "a"},
		},
		{
			name: "already over the limit: no adds", current: fullSet(51), patch: sets("new", "1", "t00", "x"), rules: AzureRules,
			want: sets("t00", "x"), wantSkipped: []string{"new"},
		},
		{
			name: "unlimited", current: fullSet(60), patch: sets("new", "1"), rules: Rules{},
			want: sets("new", "1"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, skipped := Fit(tt.current, tt.patch, tt.rules)
			mustEqualPatch(t, "Fit", got, tt.want)
			var names []string
			for _, s := range skipped {
				names = append(names, s.Name)
				if s.Reason == "" || s.Err == nil {
					t.Errorf("skipped %+v has no reason", s)
				}
			}
			if !sameStrings(names, tt.wantSkipped) {
				t.Errorf("skipped = %v, want %v", names, tt.wantSkipped)
			}
			if after := got.Apply(CaseInsensitive, tt.current); tt.rules.MaxTags > 0 && len(after) > tt.rules.MaxTags && len(after) > len(tt.current) {
				t.Errorf("result has %d tags", len(after))
			}
		})
	}
}

func TestFitLimitReason(t *testing.T) {
	_, skipped := Fit(fullSet(50), sets("new", "1"), AzureRules)
	if len(skipped) != 1 || !errors.Is(skipped[0].Err, ErrTooManyTags) {
		t.Fatalf("skipped = %+v", skipped)
	}
}

func TestFitIsDeterministic(t *testing.T) {
	patch := Patch{Set: Set{}}
	for i := 0; i < 20; i++ {
		patch.Set[fmt.Sprintf("n%02d", 19-i)] = "v"
	}
	first, _ := Fit(fullSet(45), patch, AzureRules)
	if len(first.Set) != 5 || !first.Set.Has(CaseInsensitive, "n00") || !first.Set.Has(CaseInsensitive, "n04") {
		t.Fatalf("fitted = %v, want n00..n04", first.Set)
	}
	for i := 0; i < 10; i++ {
		again, _ := Fit(fullSet(45), patch, AzureRules)
		mustEqualPatch(t, "Fit", again, first)
	}
}
