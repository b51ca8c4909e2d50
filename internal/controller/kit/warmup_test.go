package kit

import (
	"testing"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

// A warmup holds changes until every object whose pass began has indexed;
// then it drops what nobody takes. An object that is gone does not keep
// the index warming.
func TestWarmupHoldsChangesUntilEveryIndexExists(t *testing.T) {
	var w Warmup[string]
	c := func(id string) cloudchange.Change { return cloudchange.Change{ID: id} }
	w.Hold(c("before-any-pass"))
	w.Begin("a")
	w.Begin("b")
	w.Hold(c("while-a-and-b-warm"))
	w.Indexed("a")
	if got := w.Replay(); len(got) != 2 {
		t.Fatalf("replayed %d changes after a indexed, want the 2 held", len(got))
	}
	w.Hold(c("while-b-warms"))
	w.Forget("b")
	if w.Warming() {
		t.Fatal("still warming with a indexed and b gone")
	}
	w.Hold(c("nobody's"))
	if got := w.Replay(); len(got) != 1 || got[0].ID != "while-b-warms" {
		t.Fatalf("replayed %v, want only the change held while b warmed", got)
	}
	for i := range MaxEarly + 5 {
		w.Begin("c")
		w.Hold(c(string(rune('a' + i%26))))
	}
	if got := w.Replay(); len(got) != MaxEarly {
		t.Errorf("held %d changes, want at most %d", len(got), MaxEarly)
	}
}
