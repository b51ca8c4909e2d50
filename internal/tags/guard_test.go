package tags

import (
	"testing"
	"time"
)

func TestGuardDeletions(t *testing.T) {
	cases := []struct {
		name  string
		plans []Deletions
		held  int // deletions held
	}{
		{"one key of many", []Deletions{{"a", 3, []string{"env"}}, {"b", 3, []string{"env"}}}, 0},
		{"the only tag of one resource", []Deletions{{"a", 1, []string{"env"}}}, 0},
		{"every tag of one resource", []Deletions{{"a", 2, []string{"env", "team"}}}, 2},
		{"most of one resource", []Deletions{{"a", 3, []string{"env", "team"}}, {"b", 3, []string{"env"}}}, 0},
		{"most of two resources", []Deletions{{"a", 3, []string{"env", "team"}}, {"b", 3, []string{"env", "team"}}, {"c", 3, []string{"env"}}}, 4},
		{"every tag of one, most of none else", []Deletions{{"a", 2, []string{"env", "team"}}, {"b", 4, []string{"env"}}}, 2},
		{"every tag of one and most of another", []Deletions{{"a", 2, []string{"env", "team"}}, {"b", 3, []string{"env", "x"}}}, 4},
		{"half is not more than half", []Deletions{{"a", 4, []string{"env", "team"}}, {"b", 4, []string{"env", "x"}}}, 0},
		{"no names", []Deletions{{"a", 2, nil}}, 0},
	}
	for _, c := range cases {
		got := GuardDeletions(c.plans)
		if got.Count() != c.held || got.Held() != (c.held > 0) {
			t.Errorf("%s: held %d (%+v), want %d", c.name, got.Count(), got, c.held)
		}
		if got.Held() && got.Reason == "" {
			t.Errorf("%s: held without a reason", c.name)
		}
	}
}

func TestMassDeletionTokens(t *testing.T) {
	a := GuardDeletions([]Deletions{{"r1", 2, []string{"team", "env"}}})
	b := GuardDeletions([]Deletions{{"r1", 2, []string{"env", "team"}}})
	c := GuardDeletions([]Deletions{{"r2", 2, []string{"env", "team"}}})
	if a.Digest() != b.Digest() || a.Digest() == c.Digest() {
		t.Fatalf("digests: same set %s %s, other set %s", a.Digest(), b.Digest(), c.Digest())
	}
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	if a.ApprovalToken(t0) != b.ApprovalToken(t0) || a.ApprovalToken(t0) == a.ApprovalToken(t0.Add(time.Minute)) {
		t.Fatal("an approval token must name the set and when it was first held")
	}
	if !a.Has(CaseInsensitive, "r1", "ENV") || a.Has(CaseSensitive, "r1", "ENV") || a.Has(CaseInsensitive, "r2", "env") {
		t.Fatal("Has matches by resource and name as the cloud compares names")
	}
}
