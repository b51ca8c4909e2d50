package nodetags_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestCloudWritesAreAudited: each PatchTags the node sync makes on a scale
// set has a pending record before it and a result record after it, with
// the NodeTagSync that asked and the key's value before and after.
func TestCloudWritesAreAudited(t *testing.T) {
	h := newHarness(t)
	ssID := h.labelFansOut("aud", 2)
	setLabel(h, "aud-0", "azure.tags/team", "green")
	h.waitTag(ssID, "team", "green")

	var got []string
	for _, r := range h.auditRecords() {
		if cloud.CanonicalID(r.Resource) != cloud.CanonicalID(ssID) || r.Object.Kind != "NodeTagSync" || r.Object.Name != "aud" || r.Cloud != "azure" {
			t.Errorf("record %+v", r)
			continue
		}
		c, ok := r.Set["team"]
		if !ok {
			continue
		}
		before := "-"
		if c.Before != nil {
			before = *c.Before
		}
		got = append(got, fmt.Sprintf("%s %s>%s", r.Result, before, c.After))
	}
	want := []string{"pending ->blue", "ok ->blue", "pending blue>green", "ok blue>green"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("audit records of team = %q, want %q", got, want)
	}
}

// auditRecords parses the controller's audit log.
func (h *harness) auditRecords() []audit.Record {
	h.t.Helper()
	return testenv.AuditRecords(h.t, h.audit.String())
}
