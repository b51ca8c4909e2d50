package notify

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// recording is an Emitter that keeps what it was asked to emit.
type recording struct {
	mu    sync.Mutex
	notes []string
}

func (r *recording) Eventf(_ runtime.Object, _ runtime.Object, eventType, reason, _ string, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, eventType+" "+reason+" "+fmt.Sprintf(note, args...))
}

func (r *recording) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.notes)
}

func node(uid string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-" + uid, UID: types.UID("uid-" + uid)}}
}

// TestOnce plays sequences of passes and counts the events emitted: a
// problem is told once while it lasts, again after it was resolved, and an
// incomplete pass forgets nothing.
func TestOnce(t *testing.T) {
	conflict := func(n *Notifier) { n.Once(node("1"), "conflict/a", "TagConflict", "tag a differs") }
	cases := []struct {
		name  string
		steps []func(*Notifier)
		want  int
	}{
		{"a lasting problem, three passes", []func(*Notifier){
			conflict, endPass(true), conflict, endPass(true), conflict, endPass(true)}, 1},
		{"resolved, then back", []func(*Notifier){
			conflict, endPass(true), endPass(true), conflict}, 2},
		{"no pass boundary at all", []func(*Notifier){conflict, conflict, conflict, conflict}, 1},
		{"an incomplete pass in between", []func(*Notifier){
			conflict, endPass(true), endPass(false), conflict}, 1},
	}
	for _, c := range cases {
		rec := &recording{}
		n := NewNotifier(rec, "Sync")
		for _, step := range c.steps {
			step(n)
		}
		if rec.count() != c.want {
			t.Errorf("%s: %d events, want %d: %v", c.name, rec.count(), c.want, rec.notes)
		}
	}
}

func endPass(complete bool) func(*Notifier) { return func(n *Notifier) { n.EndPass(complete) } }

func TestRefusedEventIsReportedAgain(t *testing.T) {
	rec := &recording{}
	n := NewNotifier(rec, "Sync")
	n.Once(node("1"), "k", "TagUnrepresentable", "tag x is too long")
	n.Once(node("2"), "k2", "TagUnrepresentable", "tag x is too long")
	n.EndPass(true)
	n.Refused("uid-1", "TagUnrepresentable", "tag x is too long")
	if n.Known() != 1 {
		t.Fatalf("%d problems known after one refusal, want 1", n.Known())
	}
	n.Once(node("1"), "k", "TagUnrepresentable", "tag x is too long")
	n.Once(node("2"), "k2", "TagUnrepresentable", "tag x is too long")
	if rec.count() != 3 {
		t.Fatalf("want the refused event re-emitted and the accepted one not: %v", rec.notes)
	}
}

func TestNotesAreFitted(t *testing.T) {
	rec := &recording{}
	n := NewNotifier(rec, "Sync")
	long := string(make([]byte, 5000))
	n.Warn(node("1"), "R", long)
	n.Normal(node("1"), "R", long)
	n.Once(node("1"), "k", "R", long)
	for _, note := range rec.notes {
		if len(note) > MaxNoteBytes+len("Warning R ") {
			t.Fatalf("an emitted note has %d bytes", len(note))
		}
	}
}

// TestIncompletePassesForgetSupersededProblems: a problem reported under
// a new key each pass (its note carries counts) while the passes stay
// incomplete is remembered once per object and reason, not once per key.
func TestIncompletePassesForgetSupersededProblems(t *testing.T) {
	n := NewNotifier(nil, "Sync")
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "u1"}}
	for i := range 100 {
		n.Once(obj, fmt.Sprintf("failures/%d of 100 failed", i), "TagsNotApplied", "note")
		n.Once(obj, "request/ScopeUnreadable", "ScopeUnreadable", "a scope could not be read")
		n.EndPass(false)
	}
	if got := n.Known(); got != 2 {
		t.Errorf("Known = %d after 100 incomplete passes with changing counts, want 2", got)
	}
}
