package metadata_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/metadata"
)

// TestAuditSinkFailureStopsWrites: the audit fails closed. With a sink
// that takes no record, a pass writes nothing to ARM, the AzureMetadata
// says AuditFailing=True and not Applied, with a Warning event; with a
// sink that fails after a few records, the writes stop there: every
// resource ARM wrote has its pending record. Once the sink works, the next
// pass writes everything and AuditFailing turns False.
func TestAuditSinkFailureStopsWrites(t *testing.T) {
	h, _, ids := newEstateHarness(t, "deaf", 3)
	h.audit.takeRecords(0)
	h.azureMetadata("cluster-tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod"})
	h.cloudMetadata("cluster", "cluster-tags", "", map[string]string{classifierOf("deaf"): "owned"})

	h.waitAuditFailing("cluster-tags", metav1.ConditionTrue)
	if n := h.writes(); n != 0 {
		t.Fatalf("%d ARM writes while the audit sink failed, want 0", n)
	}
	if c := meta.FindStatusCondition(h.azureStatus("cluster-tags").Status.Conditions, v1alpha1.ConditionApplied); c == nil || c.Status == metav1.ConditionTrue {
		t.Errorf("Applied = %+v while nothing could be written", c)
	}
	h.waitEvent(metadata.ReasonAuditSinkFailing, "cluster-tags", "")

	// A sink that fails after 5 records stops the writes there.
	h.audit.takeRecords(5)
	h.pass("cluster")
	lines := h.auditLines()
	if len(lines) != 5 {
		t.Fatalf("%d audit lines, want the 5 the sink took", len(lines))
	}
	pending := map[string]bool{}
	for _, r := range lines {
		if r.Result == audit.ResultPending {
			pending[cloud.CanonicalID(r.Resource)] = true
		}
	}
	written := 0
	for _, id := range ids {
		if h.tags(id)["env"] == "prod" {
			written++
			if !pending[cloud.CanonicalID(id)] {
				t.Errorf("%s was written without its pending record", id)
			}
		}
	}
	if written == 0 || written == len(ids) || h.writes() != written {
		t.Errorf("%d resources tagged in %d ARM writes, want some of %d, each once", written, h.writes(), len(ids))
	}

	// The sink works again: everything is written and audited.
	h.audit.takeRecords(-1)
	h.pass("cluster")
	h.waitAuditFailing("cluster-tags", metav1.ConditionFalse)
	for _, id := range ids {
		if h.tags(id)["env"] != "prod" {
			t.Errorf("%s not tagged after the sink recovered", id)
		}
	}
	if c := meta.FindStatusCondition(h.azureStatus("cluster-tags").Status.Conditions, v1alpha1.ConditionApplied); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Applied = %+v after the sink recovered", c)
	}
}

// waitAuditFailing waits until the AzureMetadata's AuditFailing condition
// has status want.
func (h *harness) waitAuditFailing(name string, want metav1.ConditionStatus) {
	h.t.Helper()
	eventually(h.t, "AzureMetadata "+name+" AuditFailing="+string(want), func() string {
		c := meta.FindStatusCondition(h.azureStatus(name).Status.Conditions, v1alpha1.ConditionAuditFailing)
		if c == nil || c.Status != want {
			return fmt.Sprintf("AuditFailing = %+v", c)
		}
		return ""
	})
}
