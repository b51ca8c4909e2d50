package metadata_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// TestSteadyPassesWriteNoStatus: once an estate is in sync, further passes
// within the sync interval leave the AzureMetadata's status untouched (its
// resourceVersion and lastSyncTime do not move), so nothing that watches
// it is woken. (The CloudMetadata's status is written by each of these
// passes only because each serves a new sync request.)
func TestSteadyPassesWriteNoStatus(t *testing.T) {
	h := newHarness(t)
	h.estate("steady", 1)
	h.azureMetadata("tags", v1alpha1.OpcodeUpdate, map[string]string{"env": "prod"})
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("steady"): "owned"})
	h.waitReady("cm", metav1.ConditionTrue)
	h.pass("cm") // settles anything the first pass left to report
	before := h.azureStatus("tags")
	// Let the wall clock pass lastSyncTime's one-second resolution, so a
	// time stamped by the passes below would differ from the stored one.
	eventually(t, "the clock to pass lastSyncTime", func() string {
		if !time.Now().Truncate(time.Second).After(before.Status.LastSyncTime.Time) {
			return "still within the second of " + before.Status.LastSyncTime.String()
		}
		return ""
	})
	const passes = 3
	for range passes {
		h.pass("cm")
	}
	after := h.azureStatus("tags")
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the AzureMetadata was written by %d steady passes: resourceVersion %s, then %s; lastSyncTime %v, then %v",
			passes, before.ResourceVersion, after.ResourceVersion, before.Status.LastSyncTime, after.Status.LastSyncTime)
	}
}
