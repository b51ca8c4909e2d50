package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestColourTableKeepsAlignment: colour codes wrap exactly the status and
// count cells that need them, and without the codes the text is what the
// plain table prints.
func TestColourTableKeepsAlignment(t *testing.T) {
	tb := &table{columns: []string{"METADATA", "APPROVED", "DEGRADED", "FAILED", "TAGS"}}
	tb.add("azuremetadata/a", "True", "False", "0", "True")
	tb.add("awsmetadata/ünïcode", "False", "True", "3", "False")
	tb.add("azuremetadata/c", "Unknown", "-", "-", "x")
	var plain, coloured bytes.Buffer
	if err := tb.print(&plain, false); err != nil {
		t.Fatal(err)
	}
	if err := tb.print(&coloured, true); err != nil {
		t.Fatal(err)
	}
	got := coloured.String()
	if stripped := regexp.MustCompile("\x1b\\[[0-9]+m").ReplaceAllString(got, ""); stripped != plain.String() {
		t.Fatalf("colouring changed the text:\n%s\nwant\n%s", stripped, plain.String())
	}
	for _, want := range []string{
		green.paint("True"), green.paint("False"), // Approved=True, Degraded=False
		red.paint("False"), red.paint("True"), red.paint("3"),
		yellow.paint("Unknown"),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%q", want, got)
		}
	}
	if strings.Contains(got, green.paint("True")+"\n") || strings.Contains(got, "0"+ansiReset) {
		t.Errorf("an uncoloured column (TAGS) or a count of 0 was coloured:\n%q", got)
	}
}
