package kit

import (
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/tags"
)

// TestOverridden: only the names a write set are noted, keyed as the
// caller says, with the answer's value in the writer's words; they are
// forgotten a RecentWindow later.
func TestOverridden(t *testing.T) {
	var o Overridden
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	key := func(name, value string) RecentTag { return RecentTag{Resource: "r", Tag: name + "=" + value} }
	o.Note(at, tags.Set{"env": "prod", "team": "a"}, tags.Set{"env": "policy", "other": "x"}, key)
	got, ok := o.Of(key("env", "prod"))
	if !ok || len(o) != 1 || !strings.Contains(got.Writer, `env="policy"`) || !got.At.Equal(at) {
		t.Fatalf("overridden %+v", o)
	}
	o.Prune(at.Add(RecentWindow - time.Second))
	if _, ok := o.Of(key("env", "prod")); !ok {
		t.Error("forgotten within the window")
	}
	o.Prune(at.Add(RecentWindow))
	if len(o) != 0 {
		t.Errorf("kept after the window: %+v", o)
	}
	var none Overridden
	none.Note(at, tags.Set{"env": "prod"}, nil, key)
	if none != nil {
		t.Error("an answer that agrees noted something")
	}
}
