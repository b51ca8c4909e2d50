package operator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/tags"
)

// The handover fits in a Lease annotation: tags go first, then changes,
// and what is kept still decodes.
func TestTheHandoverFitsInTheLease(t *testing.T) {
	big := tags.Set{"note": strings.Repeat("x", 200)}
	make := func(n int, withTags bool) []cloudchange.Change {
		var out []cloudchange.Change
		for i := range n {
			c := cloudchange.Change{Cloud: "azure", Resource: fmt.Sprintf("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/d%d", i),
				Kind: cloudchange.KindWrite, ID: fmt.Sprintf("event-%d", i)}
			if withTags {
				c.Tags = big
			}
			out = append(out, c)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		changes  []cloudchange.Change
		wantAll  bool
		wantTags bool
	}{
		{"a few, with their tags", make(10, true), true, true},
		{"many: without tags", make(500, true), true, false},
		{"too many: the first that fit", make(5000, true), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value, err := encodeHandover(tc.changes)
			if err != nil {
				t.Fatal(err)
			}
			if len(value) > maxHandoverBytes {
				t.Fatalf("%d bytes, more than %d", len(value), maxHandoverBytes)
			}
			var left []handedChange
			if err := json.Unmarshal([]byte(value), &left); err != nil {
				t.Fatal(err)
			}
			var got []cloudchange.Change
			for _, h := range left {
				got = append(got, h.change())
			}
			if all := len(got) == len(tc.changes); all != tc.wantAll || len(got) == 0 || got[0].ID != "event-0" {
				t.Errorf("kept %d of %d changes (first %q)", len(got), len(tc.changes), got[0].ID)
			}
			if hasTags := got[0].Tags != nil; hasTags != tc.wantTags {
				t.Errorf("tags kept: %v, want %v", hasTags, tc.wantTags)
			}
		})
	}
	if v, err := encodeHandover(nil); v != "" || err != nil {
		t.Errorf("no changes: %q, %v; want no annotation", v, err)
	}
}
