package nodetags_test

import (
	"testing"

	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/cloudchangetest"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
)

// TestARemovalTheCloudAttributesToAPersonCrossesOver: a tag copied up from
// a label vanishes from its scale set. When the change's event names no
// one, or an application (a platform's reconcile), the tag is put back;
// when it names a person (their portal or CLI session), it is their
// deletion: the labels follow.
func TestARemovalTheCloudAttributesToAPersonCrossesOver(t *testing.T) {
	h, hub, _ := newEventsHarness(t, 0)
	id := h.pool("person", 2, map[string]string{"env": "prod"})
	setLabel(h, "person-0", "azure.tags/team", "blue")
	h.waitTag(id, "team", "blue")
	h.waitLabel("person-1", "azure.tags/team", "blue")

	// An application's removal (AKS's resource provider, say): put back.
	h.settled("person")
	if err := h.cloud.DeleteTags(id, "team"); err != nil {
		t.Fatal(err)
	}
	byApp := write(id, "by-app")
	byApp.Writer = cloudchange.Writer{ID: "6dae42f8-4368-4678-94ff-3960e28e3630"}
	if err := cloudchangetest.Publish(t, hub, waitFor, byApp); err != nil {
		t.Fatal(err)
	}
	h.waitTag(id, "team", "blue")
	h.waitEvent(nodetags.ReasonTagsRestored, "person")

	// A person's removal: the labels follow.
	h.settled("person")
	if err := h.cloud.DeleteTags(id, "team"); err != nil {
		t.Fatal(err)
	}
	byPerson := write(id, "by-person")
	byPerson.Writer = cloudchange.Writer{ID: "ana@example.com", Person: true}
	if err := cloudchangetest.Publish(t, hub, waitFor, byPerson); err != nil {
		t.Fatal(err)
	}
	h.waitLabel("person-0", "azure.tags/team", absent)
	h.waitLabel("person-1", "azure.tags/team", absent)
	if got, ok := h.tags(id)["team"]; ok {
		t.Fatalf("a person's deletion was undone: team=%q", got)
	}
}
