package metadata

import (
	"fmt"
	"testing"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// TestHeldRecordRoundTrip: what status.held records is what a controller
// started from it takes as held, resource by resource; a resource it does
// not record holds nothing.
func TestHeldRecordRoundTrip(t *testing.T) {
	h := newHeldTags()
	h.replace("/subscriptions/s/resourceGroups/rg/providers/x/disks/a", []string{"env", "team"})
	h.replace("/subscriptions/s/resourceGroups/rg/providers/x/disks/b", []string{"env"})
	h.replace("/subscriptions/s/resourceGroups/rg/providers/x/disks/c", []string{"env", "team"})
	rec := h.record(map[string][]string{"/subscriptions/s/resourceGroups/rg/providers/x/disks/d": {"team"}})
	if len(rec) != 3 || rec[0].Resources != 2 || fmt.Sprint(rec[0].Names) != "[env team]" {
		t.Fatalf("record %+v: want the largest group (env, team on 2) first, 3 groups", rec)
	}
	back := heldFromStatus(v1alpha1.ProviderMetadataStatus{Held: rec})
	for id, want := range map[string]string{"disks/a": "true true", "disks/B": "true false", "disks/d": "false true"} {
		held := back.lookup("/subscriptions/s/resourceGroups/rg/providers/x/" + id)
		if held == nil {
			t.Errorf("%s: nothing held", id)
			continue
		}
		if got := fmt.Sprint(held("env"), held("team")); got != want {
			t.Errorf("%s: env, team held = %s, want %s", id, got, want)
		}
	}
	if back.lookup("/subscriptions/s/resourceGroups/rg/providers/x/disks/other") != nil {
		t.Error("a resource the record does not name holds something")
	}
}

// TestHeldRecordIsBounded: past maxHeldGroups name sets, the rarest are
// left out.
func TestHeldRecordIsBounded(t *testing.T) {
	h := newHeldTags()
	for i := range maxHeldGroups + 10 {
		h.replace(fmt.Sprintf("/r/%d", i), []string{fmt.Sprintf("k%03d", i)})
	}
	h.replace("/r/extra", []string{"k000"})
	rec := h.record(nil)
	if len(rec) != maxHeldGroups || rec[0].Resources != 2 {
		t.Errorf("%d groups, the first of %d: want %d, the largest first", len(rec), rec[0].Resources, maxHeldGroups)
	}
}
