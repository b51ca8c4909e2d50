package notify

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// Emitter records events; *Recorder and client-go's events.EventRecorder
// both are.
type Emitter = events.EventRecorder

// Notifier emits the events of one owner (e.g. one NodeTagSync): problems
// once while they last, and plain notices every time. It is safe for
// concurrent use.
type Notifier struct {
	rec    Emitter
	action string

	mu   sync.Mutex
	seen map[string]sent // problems reported and still present
	next map[string]sent // problems seen in the current pass
}

// sent is what was emitted for a problem, to match a refused event.
type sent struct {
	uid, reason, note string
}

// NewNotifier returns a Notifier emitting through rec (nil: no events) with
// the given action (e.g. "Sync").
func NewNotifier(rec Emitter, action string) *Notifier {
	return &Notifier{rec: rec, action: action, seen: map[string]sent{}, next: map[string]sent{}}
}

// Once emits a Warning about obj unless the problem key was already reported
// and has lasted since. The note is fitted to MaxNoteBytes.
func (n *Notifier) Once(obj runtime.Object, key, reason, note string) {
	n.OnceRelated(obj, nil, key, reason, note)
}

// OnceRelated is Once for a problem that involves another object: the
// event names it as related (so problems with different related objects
// are separate events, not one series).
func (n *Notifier) OnceRelated(obj, related runtime.Object, key, reason, note string) {
	note = Fit(note)
	s := sent{uid: uidOf(obj), reason: reason, note: note}
	n.mu.Lock()
	_, known := n.seen[key]
	n.next[key] = s
	n.seen[key] = s
	n.mu.Unlock()
	if !known {
		n.emitRelated(obj, related, corev1.EventTypeWarning, reason, note)
	}
}

// Warn emits a Warning about obj every time it is called.
func (n *Notifier) Warn(obj runtime.Object, reason, note string) {
	n.emit(obj, corev1.EventTypeWarning, reason, Fit(note))
}

// Normal emits a Normal event about obj.
func (n *Notifier) Normal(obj runtime.Object, reason, note string) {
	n.emit(obj, corev1.EventTypeNormal, reason, Fit(note))
}

// EndPass closes a pass. After a complete pass, problems it did not see are
// forgotten (a recurrence is reported again); after an incomplete one (the
// pass could not look at everything) every known problem is kept, except
// those superseded: a problem of an object and reason that the pass
// reported under another key (e.g. the same failures with other counts).
// So what a Notifier remembers is bounded by its objects and reasons.
func (n *Notifier) EndPass(complete bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if complete {
		n.seen = n.next
	} else {
		n.dropSuperseded()
	}
	n.next = map[string]sent{}
}

// dropSuperseded forgets the known problems whose object and reason the
// current pass reported under another key.
func (n *Notifier) dropSuperseded() {
	current := make(map[[2]string]bool, len(n.next))
	for _, s := range n.next {
		current[[2]string{s.uid, s.reason}] = true
	}
	for k, s := range n.seen {
		if _, now := n.next[k]; !now && current[[2]string{s.uid, s.reason}] {
			delete(n.seen, k)
		}
	}
}

// Refused forgets every problem whose event matches the refused one, so the
// next pass reports it again.
func (n *Notifier) Refused(uid, reason, note string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range []map[string]sent{n.seen, n.next} {
		for k, s := range m {
			if s.uid == uid && s.reason == reason && s.note == note {
				delete(m, k)
			}
		}
	}
}

// Known is how many problems are currently reported.
func (n *Notifier) Known() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.seen)
}

func (n *Notifier) emit(obj runtime.Object, eventType, reason, note string) {
	n.emitRelated(obj, nil, eventType, reason, note)
}

func (n *Notifier) emitRelated(obj, related runtime.Object, eventType, reason, note string) {
	if n.rec != nil {
		n.rec.Eventf(obj, related, eventType, reason, n.action, "%s", note)
	}
}

// uidOf returns obj's UID, or "" when it has none.
func uidOf(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return string(m.GetUID())
}
