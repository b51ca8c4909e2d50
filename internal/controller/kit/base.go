package kit

import (
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Base is what every reconciler holds: the client it reads and writes
// with, its event recorder and its clock. A reconciler embeds it, builds it
// with NewBase and calls UseManager from SetupWithManager.
type Base struct {
	// Client reads (through the manager's cache) and writes.
	Client client.Client
	// Recorder emits the controller's events.
	Recorder events.EventRecorder
	// Clock tells the time (a fake one in tests).
	Clock clock.PassiveClock
}

// NewBase is a Base of c, recorder and clk; a nil clk is the real clock.
// A nil c or recorder is filled in by UseManager.
func NewBase(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock) Base {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return Base{Client: c, Recorder: recorder, Clock: clk}
}

// UseManager gives the Base what it was not built with: the manager's
// client, and an event recorder of its own reporting as tagsync-<name>.
func (b *Base) UseManager(mgr manager.Manager, name string) error {
	return UseManager(mgr, name, &b.Client, &b.Recorder)
}

// Now is the clock's time.
func (b *Base) Now() time.Time { return b.Clock.Now() }
