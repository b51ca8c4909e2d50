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

	// The write reaches the cloud a moment before its result is recorded:
	// the records are read until the last one is there.
	want := []string{"pending ->blue", "ok ->blue", "pending blue>green", "ok blue>green"}
	var got []string
	testenv.Eventually(t, waitFor, "the audit record of the last write", func() string {
		got = h.teamRecords(ssID)
		if len(got) < len(want) {
			return fmt.Sprintf("records %q", got)
		}
		return ""
	})
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("audit records of team = %q, want %q", got, want)
	}
}

// teamRecords renders the audit records of the team tag on ssID as
// "<result> <before>><after>", failing t on a record of anything else.
func (h *harness) teamRecords(ssID string) []string {
	h.t.Helper()
	var got []string
	for _, r := range h.auditRecords() {
		if cloud.CanonicalID(r.Resource) != cloud.CanonicalID(ssID) || r.Object.Kind != "NodeTagSync" || r.Object.Name != "aud" || r.Cloud != "azure" {
			h.t.Errorf("record %+v", r)
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
	return got
}

// auditRecords parses the controller's audit log.
func (h *harness) auditRecords() []audit.Record {
	h.t.Helper()
	return testenv.AuditRecords(h.t, h.audit.String())
}
