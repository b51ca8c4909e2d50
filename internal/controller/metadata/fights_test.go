package metadata_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/cloudchangetest"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestAFightStopsAfterThreePutBacks: another writer (a policy's modify
// effect, say) removes an owned tag from a resource each time the request
// puts it back, and its Event Grid changes name it. The request puts it
// back 3 times, then stops: no more writes however often it is removed;
// the resource's failure says Fighting and names the writer; the other
// resources stay in sync.
func TestAFightStopsAfterThreePutBacks(t *testing.T) {
	h, hub, _ := newEventsHarness(t)
	ids := h.applied("fight")
	id := ids[0]
	base := h.writes()
	strip := func(i int) {
		t.Helper()
		if err := h.az.Server.DeleteTags(id, "env"); err != nil {
			t.Fatal(err)
		}
		c := cloudchangetest.Write("azure", id, fmt.Sprintf("strip-%d", i), nil)
		c.Writer = cloudchange.Writer{ID: "policy-modify-env"}
		if err := cloudchangetest.Publish(t, hub, waitFor, c); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 3; i++ {
		strip(i)
		if got := h.tags(id)["env"]; got != "prod" {
			t.Fatalf("put-back %d: env=%q, want prod", i, got)
		}
	}
	if n := h.writes() - base; n != 3 {
		t.Errorf("%d writes for 3 put-backs, want 3", n)
	}
	for i := 4; i <= 6; i++ {
		strip(i)
	}
	if got, ok := h.tags(id)["env"]; ok {
		t.Errorf("env=%q put back a fourth time", got)
	}
	if n := h.writes() - base; n != 3 {
		t.Errorf("%d writes after 6 removals, want still 3", n)
	}
	az := h.azureStatus("fight-tags")
	var found bool
	for _, f := range az.Status.Failures {
		if f.Resource == id && f.Reason == metadata.ReasonFighting && strings.Contains(f.Message, "policy-modify-env") {
			found = true
		}
	}
	if !found {
		t.Errorf("no Fighting failure naming the writer on %s: %+v", id, az.Status.Failures)
	}
	if c := h.waitReady("fight", metav1.ConditionFalse); c.Status.InSync != c.Status.Matched-1 {
		t.Errorf("in sync %d of %d, want all but the fought-over resource", c.Status.InSync, c.Status.Matched)
	}
	if g := testenv.Counter(t, "tagsync_metadata_fights", map[string]string{"namespace": h.ns, "cloudmetadata": "fight"}); g != 1 {
		t.Errorf("fights gauge %v, want 1", g)
	}
}
