package notify

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNoteBytes is the longest event note the API server accepts
// (events.k8s.io/v1 refuses notes over 1 KiB).
const MaxNoteBytes = 1024

// ellipsis ends a clipped note.
const ellipsis = "…"

// Fit returns note unchanged when it fits in MaxNoteBytes, else clipped on a
// character boundary with a trailing "…", so the result always fits.
func Fit(note string) string { return clip(note, MaxNoteBytes) }

// Summary lists items for a note: all of them when there are at most shown,
// else the first shown and "and N more". Long items are clipped to
// maxItemBytes so a few long names cannot crowd out the rest; the bound
// leaves room for an item that names a cloud identity in full (an AWS
// assumed-role session ARN, an Entra application), which a fight's
// message must not cut.
//
//	Summary([]string{"a=1", "b=2", "c=3", "d=4"}, 2) == "a=1, b=2 and 2 more"
func Summary(items []string, shown int) string {
	const maxItemBytes = 256
	n := min(len(items), shown)
	parts := make([]string, n)
	for i := range n {
		parts[i] = clip(items[i], maxItemBytes)
	}
	s := strings.Join(parts, ", ")
	if rest := len(items) - n; rest > 0 {
		s += fmt.Sprintf(" and %d more", rest)
	}
	return s
}

// clip shortens s to at most max bytes on a character boundary, ending it
// with "…" when it was cut.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
