package kit

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tagsync/tagsync/internal/notify"
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

	// replaced is what PatchStatus remembers of its writes (object.go).
	statusOnce sync.Once
	replaced   *lru.Cache
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
// client, and an event recorder of its own reporting as tagsync-<name>
// that tells of the events the API server refuses.
func (b *Base) UseManager(mgr manager.Manager, name string) error {
	if b.Client == nil {
		b.Client = mgr.GetClient()
	}
	if b.Recorder == nil {
		rec, err := notify.AddRecorder(mgr, "tagsync-"+name)
		if err != nil {
			return err
		}
		b.Recorder = rec
	}
	return nil
}

// Now is the clock's time.
func (b *Base) Now() time.Time { return b.Clock.Now() }

// Events is the Recorder as the controller's notifiers emit through it
// (NewStates): an event names its object at the version the controller's
// own last status write made (Current), not at the cached version that
// write replaced. nil when the Base has no Recorder.
func (b *Base) Events() notify.Emitter {
	if b.Recorder == nil {
		return nil
	}
	return currentEvents{EventRecorder: b.Recorder, base: b}
}

// currentEvents is Base.Events's recorder.
type currentEvents struct {
	events.EventRecorder
	base *Base
}

// Eventf implements events.EventRecorder.
func (e currentEvents) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if o, ok := regarding.(client.Object); ok {
		regarding = e.base.Current(o)
	}
	e.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// OnRefused passes f on to the recorder when it reports refused events
// (notify.Recorder does).
func (e currentEvents) OnRefused(f func(uid, reason, note string)) {
	if r, ok := e.EventRecorder.(interface {
		OnRefused(func(uid, reason, note string))
	}); ok {
		r.OnRefused(f)
	}
}
