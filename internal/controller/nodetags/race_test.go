package nodetags_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestALabelEditedDuringItsOwnSyncLands: a label is set, and edited again
// while the pass that copies its first value to the cloud is writing (the
// edit lands between the pass's read of the Node and its write of the
// Node's base, which the API server then refuses with Conflict). The pass
// records the cloud write in the base anyway, so the next pass takes the
// edit for the Node's and copies it: no conflict stays between the tag the
// pass wrote and the label edited after it read.
func TestALabelEditedDuringItsOwnSyncLands(t *testing.T) {
	var armed atomic.Bool
	var h *harness
	h = newHarnessWithTransport(t, func(r *http.Request) {
		if r.Method != http.MethodGet && strings.Contains(strings.ToLower(r.URL.Path), "/vm-race") && armed.CompareAndSwap(true, false) {
			setLabel(h, "race", "azure.tags/team", "green") // the edit, while the pass writes blue
		}
	})
	vmID, pid := h.vmInGroup("rg-race", "vm-race", map[string]string{"env": "prod"})
	h.node("race", pid, nil, nil)
	h.sync("race", nil)
	h.waitLabel("race", "azure.tags/env", "prod")
	h.passDone("race", 1)

	armed.Store(true)
	setLabel(h, "race", "azure.tags/team", "blue")
	h.waitTag(vmID, "team", "green")
	if armed.Load() {
		t.Fatal("the pass wrote no tag while armed: the edit was never made during a write")
	}
	nts := h.syncAndWait("race")
	if nts.Status.ConflictCount != 0 {
		t.Errorf("conflicts %+v after the edit landed", nts.Status.Conflicts)
	}
	if got := h.labels("race")["azure.tags/team"]; got != "green" {
		t.Errorf("team label = %q, want the edit, green", got)
	}
}
