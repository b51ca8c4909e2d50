package operator

import (
	"context"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/testenv"
)

// A stop with a delay fails readiness at once and ends the manager's
// context only after the delay: the Service drops the replica while it
// still serves.
func TestAStopFailsReadinessBeforeItStopsServing(t *testing.T) {
	s := &stopping{}
	if err := s.check(nil); err != nil {
		t.Fatalf("ready before the stop: %v", err)
	}
	parent, stop := context.WithCancel(context.Background())
	delayed := s.delay(parent, 300*time.Millisecond)
	stop()
	testenv.Eventually(t, 5*time.Second, "readiness failing", func() string {
		if s.check(nil) == nil {
			return "still ready"
		}
		return ""
	})
	testenv.Eventually(t, 5*time.Second, "the manager's context ended", func() string {
		if delayed.Err() == nil {
			return "not yet"
		}
		return ""
	})
	if got := time.Since(*s.since.Load()); got < 300*time.Millisecond {
		t.Errorf("the manager's context ended %s after the stop, want after the 300ms delay", got)
	}
	if s.delay(context.Background(), 0) != context.Background() {
		t.Error("no delay: the context should be the caller's")
	}
}
