package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// TestPatchEachWritesOneResourceAtATimeInOrder: PatchEach is the fresh batch write
// for a provider without batches: one write per ID, in order, each result
// reported before the next write, failures to their own ID only.
func TestPatchEachWritesOneResourceAtATimeInOrder(t *testing.T) {
	var log []string
	patchTags := func(_ context.Context, id string, p tags.Patch) (cloud.Resource, error) {
		log = append(log, "write "+id)
		if id == "b" {
			return cloud.Resource{}, errors.New("refused")
		}
		return cloud.Resource{ID: id, Tags: p.Set}, nil
	}
	patch := tags.Patch{Set: tags.Set{"env": "prod"}}
	cloud.PatchEach(context.Background(), patchTags, []string{"a", "b", "c"}, patch, func(id string, res cloud.Resource, err error) {
		log = append(log, fmt.Sprintf("result %s %v %v", id, res.Tags, err))
	})
	want := "[write a result a map[env:prod] <nil> write b result b map[] refused write c result c map[env:prod] <nil>]"
	if got := fmt.Sprint(log); got != want {
		t.Fatalf("calls = %s, want %s", got, want)
	}
}
