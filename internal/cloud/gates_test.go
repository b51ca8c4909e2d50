package cloud

import (
	"testing"
	"time"
)

// TestGatesCloseAndForget: Close only extends a gate, Forget opens the
// matching ones, and keys are independent.
func TestGatesCloseAndForget(t *testing.T) {
	g := NewGates[string]()
	start := time.Now()
	g.SetClock(func() time.Time { return start })
	g.Close("a", time.Minute)
	g.Close("a", time.Second)
	if got := g.Remaining("a"); got != time.Minute {
		t.Fatalf("a: %s left, want the longer close (1m)", got)
	}
	if got := g.Remaining("b"); got != 0 {
		t.Fatalf("b: %s left, want open", got)
	}
	g.Advance(30 * time.Second)
	if got := g.Remaining("a"); got != 30*time.Second {
		t.Fatalf("a after 30s: %s left, want 30s", got)
	}
	g.Forget(func(k string) bool { return k == "a" })
	if got := g.Remaining("a"); got != 0 {
		t.Fatalf("a after Forget: %s left, want open", got)
	}
}
