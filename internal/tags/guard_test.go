package tags

import (
	"slices"
	"testing"
	"time"
)

// d is a Deletions of resource r with synced tags and names.
func d(r string, synced int, names ...string) Deletions {
	return Deletions{Resource: r, Synced: synced, Names: names}
}

// wide is a Spread in which every tag is carried by 100 resources.
func wide(names ...string) Spread {
	s := Spread{NameCase: CaseInsensitive, Carriers: map[string]int{}}
	for _, n := range names {
		s.Carriers[n] = 100
	}
	return s
}

func TestGuardDeletions(t *testing.T) {
	cases := []struct {
		name   string
		plans  []Deletions
		spread Spread
		held   int // deletions held
	}{
		{"one key of many", []Deletions{d("a", 3, "env"), d("b", 3, "env")}, wide("env"), 0},
		{"the only tag of one resource", []Deletions{d("a", 1, "env")}, wide("env"), 0},
		{"every tag of one resource", []Deletions{d("a", 2, "env", "team")}, wide("env", "team"), 2},
		{"most of one resource", []Deletions{d("a", 3, "env", "team"), d("b", 3, "env")}, wide("env", "team"), 0},
		{"most of two resources", []Deletions{d("a", 3, "env", "team"), d("b", 3, "env", "team"), d("c", 3, "env")}, wide("env", "team"), 4},
		{"every tag of one, most of none else", []Deletions{d("a", 2, "env", "team"), d("b", 4, "env")}, wide("env", "team"), 2},
		{"every tag of one and most of another", []Deletions{d("a", 2, "env", "team"), d("b", 3, "env", "x")}, wide("env", "team", "x"), 4},
		{"half is not more than half", []Deletions{d("a", 4, "env", "team"), d("b", 4, "env", "x")}, wide("env", "team", "x"), 0},
		{"no names", []Deletions{d("a", 2)}, Spread{}, 0},
		// The per-tag rule.
		{"one tag from 4 of 100 resources", []Deletions{d("a", 9, "cc"), d("b", 9, "cc"), d("c", 9, "cc"), d("e", 9, "cc")}, wide("cc"), 4},
		{"one tag from 3 of 100 resources", []Deletions{d("a", 9, "cc"), d("b", 9, "cc"), d("c", 9, "cc")}, wide("cc"), 0},
		{"one tag from 2 of 5 resources (the tidy-up)", []Deletions{d("a", 9, "cc"), d("b", 9, "cc")},
			Spread{NameCase: CaseInsensitive, Carriers: map[string]int{"cc": 5}}, 2},
		{"one tag from 2 of 8 resources (a quarter)", []Deletions{d("a", 9, "cc"), d("b", 9, "cc")},
			Spread{NameCase: CaseInsensitive, Carriers: map[string]int{"cc": 8}}, 0},
		{"one tag from 1 of 1 resource", []Deletions{d("a", 9, "cc")}, Spread{NameCase: CaseInsensitive, Carriers: map[string]int{"cc": 1}}, 0},
		{"no carriers known: the deletions themselves", []Deletions{d("a", 9, "cc"), d("b", 9, "cc")}, Spread{}, 2},
		{"labels count as deletions of the tag", []Deletions{d("a", 9, "cc"), {Resource: "b", Synced: 9, Names: []string{"CC"}, Labels: true}},
			Spread{NameCase: CaseInsensitive, Carriers: map[string]int{"cc": 5}}, 2},
		{"spread over passes", []Deletions{d("a", 9, "cc")},
			Spread{NameCase: CaseInsensitive, Carriers: map[string]int{"cc": 95}, Recent: map[string][]string{"cc": {"b", "c", "e"}}}, 1},
		{"the window's own resource again", []Deletions{d("a", 9, "cc")},
			Spread{NameCase: CaseInsensitive, Carriers: map[string]int{"cc": 97}, Recent: map[string][]string{"cc": {"a", "b", "c"}}}, 0},
		// Unclear deletions.
		{"an unclear deletion", []Deletions{{Resource: "a", Synced: 9, Names: []string{"cc", "x"}, Unclear: []string{"cc"}}}, wide("cc", "x"), 1},
	}
	for _, c := range cases {
		got := GuardDeletions(c.plans, c.spread)
		if got.Count() != c.held || got.Held() != (c.held > 0) {
			t.Errorf("%s: held %d (%+v), want %d", c.name, got.Count(), got, c.held)
		}
		if got.Held() && got.Reason == "" {
			t.Errorf("%s: held without a reason", c.name)
		}
	}
}

func TestDeletionLedger(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	l := DeletionLedger{Window: time.Hour}
	l.Record(CaseInsensitive, "a", []string{"CC"}, t0)
	l.Record(CaseInsensitive, "b", []string{"cc", "env"}, t0.Add(30*time.Minute))
	if got := l.Recent(t0.Add(45 * time.Minute)); len(got["cc"]) != 2 || len(got["env"]) != 1 {
		t.Fatalf("within the window: %v", got)
	}
	if got := l.Recent(t0.Add(75 * time.Minute)); !slices.Equal(got["cc"], []string{"b"}) {
		t.Fatalf("a's deletion is older than the window: %v", got)
	}
	if got := l.Recent(t0.Add(3 * time.Hour)); len(got) != 0 {
		t.Fatalf("everything forgotten: %v", got)
	}
}

// TestDeletionLedgerEntries: a ledger loaded with another's entries (a new
// leader reading the status) holds what the other would: the next
// deletion of a tag already deleted from 6 resources, and not a deletion
// older than the window.
func TestDeletionLedgerEntries(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	var old DeletionLedger
	for i := range 6 {
		old.Record(CaseInsensitive, string(rune('a'+i)), []string{"Owner"}, t0.Add(time.Duration(i)*time.Minute))
	}
	old.Record(CaseInsensitive, "z", []string{"env"}, t0.Add(-2*time.Hour))
	now := t0.Add(10 * time.Minute)
	entries := old.Entries(now)
	if len(entries) != MaxKeyDeletions+1 || entries[0].Resource != "f" || entries[0].Key != "owner" {
		t.Fatalf("entries = %+v, want the 4 latest deletions of owner, f first", entries)
	}
	var fresh DeletionLedger
	fresh.Load(entries)
	spread := Spread{NameCase: CaseInsensitive, Carriers: map[string]int{"owner": 100, "env": 100}, Recent: fresh.Recent(now)}
	if got := GuardDeletions([]Deletions{d("g", 3, "owner")}, spread); got.Count() != 1 {
		t.Fatalf("the loaded ledger let a 7th deletion of owner through: %+v", got)
	}
	if got := GuardDeletions([]Deletions{d("g", 3, "env")}, spread); got.Held() {
		t.Fatalf("a deletion older than the window counted: %+v", got)
	}
}

func TestMassDeletionTokens(t *testing.T) {
	a := GuardDeletions([]Deletions{d("r1", 2, "team", "env")}, wide("env", "team"))
	b := GuardDeletions([]Deletions{d("r1", 2, "env", "team")}, wide("env", "team"))
	c := GuardDeletions([]Deletions{d("r2", 2, "env", "team")}, wide("env", "team"))
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
