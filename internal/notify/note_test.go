package notify

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFit(t *testing.T) {
	cases := []struct {
		name string
		in   string
	}{
		{"short", "tag a differs"},
		{"exactly the limit", strings.Repeat("a", MaxNoteBytes)},
		{"one over", strings.Repeat("a", MaxNoteBytes+1)},
		{"multi-byte at the cut", strings.Repeat("é", MaxNoteBytes)},
		{"huge", strings.Repeat("x", 100_000)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Fit(c.in)
			if len(got) > MaxNoteBytes {
				t.Fatalf("%d bytes, over the %d limit", len(got), MaxNoteBytes)
			}
			if !utf8.ValidString(got) {
				t.Fatal("clipped inside a character")
			}
			if len(c.in) <= MaxNoteBytes && got != c.in {
				t.Fatalf("a note that fits was changed: %q", got)
			}
			if len(c.in) > MaxNoteBytes && !strings.HasSuffix(got, "…") {
				t.Fatalf("a clipped note does not say so: ...%q", got[len(got)-10:])
			}
		})
	}
}

func TestSummary(t *testing.T) {
	items := []string{"a=1", "b=2", "c=3", "d=4"}
	cases := []struct {
		shown int
		want  string
	}{
		{10, "a=1, b=2, c=3, d=4"},
		{4, "a=1, b=2, c=3, d=4"},
		{2, "a=1, b=2 and 2 more"},
		{0, " and 4 more"},
	}
	for _, c := range cases {
		if got := Summary(items, c.shown); got != c.want {
			t.Errorf("Summary(%d) = %q, want %q", c.shown, got, c.want)
		}
	}
	long := strings.Repeat("n", 400) + "=v"
	if got := Summary([]string{long}, 5); len(got) > 256 || !strings.HasSuffix(got, "…") {
		t.Errorf("a 400-character item was not clipped to 256 bytes: %d bytes", len(got))
	}
	role := "cost-center on Service shop/web (changed by arn:aws:sts::123456789012:assumed-role/aws-load-balancer-controller/1764390000000000000)"
	if got := Summary([]string{role}, 5); got != role {
		t.Errorf("an item naming an assumed role's session was clipped: %q", got)
	}
}
