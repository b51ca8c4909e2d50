package metadata_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/metadata"
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

// TestARequestReportsReady: an AzureMetadata reports Ready, as every
// tagsync kind does: True (Applied) once every matched resource carries
// the request, False with the Suspended condition's reason and message
// while it is suspended, and True again once resumed. (TestAWSLifecycle
// checks an AWSMetadata's, TestInvalidTagsApplyNothing an invalid one's.)
func TestARequestReportsReady(t *testing.T) {
	h := newHarness(t)
	ids := h.disks("ready", 2, nil)
	az := h.azureMetadata("tags", v1alpha1.OpcodeAdd, map[string]string{"env": "prod"})
	h.cloudMetadata("cm", "tags", "", map[string]string{classifierOf("ready"): "owned"})
	ready := h.waitCondition("AzureMetadata", v1alpha1.ConditionReady, metav1.ConditionTrue, metadata.ReasonApplied, h.azureCondition("tags"))
	if !strings.Contains(ready.Message, fmt.Sprintf("all %d matched resource(s)", len(ids))) {
		t.Errorf("Ready message %q does not say the request is on every matched resource", ready.Message)
	}
	if m := h.missing(ids, "env", "prod"); m != "" {
		t.Fatalf("Ready before the request was written: %s", m)
	}

	h.update(az, func() { az.Spec.Suspend = true })
	ready = h.waitCondition("AzureMetadata", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSuspended, h.azureCondition("tags"))
	if !strings.HasPrefix(ready.Message, "Suspended=True: ") {
		t.Errorf("Ready message %q does not name the Suspended condition", ready.Message)
	}

	h.update(az, func() { az.Spec.Suspend = false })
	h.waitCondition("AzureMetadata", v1alpha1.ConditionReady, metav1.ConditionTrue, metadata.ReasonApplied, h.azureCondition("tags"))
}
