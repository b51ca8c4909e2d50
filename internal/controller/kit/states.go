package kit

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tagsync/tagsync/internal/notify"
)

// States is what a controller remembers about each object between passes,
// keyed by K (a name or namespaced name). A state lives as long as its
// object: an object recreated under the same name (a new UID) starts a new
// state, and Forget drops it when the object is deleted. Each state comes
// with a Notifier, so problems are reported once per object.
//
// It is safe for concurrent use; the states it returns are the caller's to
// guard.
type States[K comparable, S any] struct {
	mu       sync.Mutex
	entries  map[K]*entry[S]
	recorder notify.Emitter
	action   string
	build    func(*notify.Notifier) S
}

type entry[S any] struct {
	uid   types.UID
	notes *notify.Notifier
	state S
}

// NewStates returns an empty set of states whose notifiers emit through
// recorder with action; build makes a new object's state around its
// notifier. When recorder reports the events the API server refuses (as
// notify.Recorder does), every notifier is told, so the refused problem is
// reported again.
func NewStates[K comparable, S any](recorder notify.Emitter, action string, build func(*notify.Notifier) S) *States[K, S] {
	s := &States[K, S]{entries: map[K]*entry[S]{}, recorder: recorder, action: action, build: build}
	if rec, ok := recorder.(interface {
		OnRefused(func(uid, reason, note string))
	}); ok {
		rec.OnRefused(s.refused)
	}
	return s
}

// For returns the state of the object key names, new when the name is new
// or now names another object (uid).
func (s *States[K, S]) For(key K, uid types.UID) S {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok || e.uid != uid {
		notes := notify.NewNotifier(s.recorder, s.action)
		e = &entry[S]{uid: uid, notes: notes, state: s.build(notes)}
		s.entries[key] = e
	}
	return e.state
}

// Get returns the state of key, if there is one.
func (s *States[K, S]) Get(key K) (S, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		var zero S
		return zero, false
	}
	return e.state, true
}

// Forget drops the state of a deleted object.
func (s *States[K, S]) Forget(key K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, key)
}

// Each calls f for every state, on a snapshot taken under the lock (f may
// call the other methods).
func (s *States[K, S]) Each(f func(K, S)) {
	s.mu.Lock()
	keys := make([]K, 0, len(s.entries))
	states := make([]S, 0, len(s.entries))
	for k, e := range s.entries {
		keys, states = append(keys, k), append(states, e.state)
	}
	s.mu.Unlock()
	for i := range keys {
		f(keys[i], states[i])
	}
}

// Len is how many objects have a state.
func (s *States[K, S]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// refused tells every notifier of an event the API server refused.
func (s *States[K, S]) refused(uid, reason, note string) {
	s.mu.Lock()
	notes := make([]*notify.Notifier, 0, len(s.entries))
	for _, e := range s.entries {
		notes = append(notes, e.notes)
	}
	s.mu.Unlock()
	for _, n := range notes {
		n.Refused(uid, reason, note)
	}
}
