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

func TestOnceReportsAProblemOnceWhileItLasts(t *testing.T) {
	rec := &recording{}
	n := NewNotifier(rec, "Sync")
	for range 3 {
		n.Once(node("1"), "conflict/a", "TagConflict", "tag a differs")
		n.EndPass(true)
	}
	if rec.count() != 1 {
		t.Fatalf("%d events for one lasting problem, want 1: %v", rec.count(), rec.notes)
	}
	n.EndPass(true) // a pass without the problem: it is resolved
	n.Once(node("1"), "conflict/a", "TagConflict", "tag a differs")
	if rec.count() != 2 {
		t.Fatalf("a recurrence after resolution was not reported: %v", rec.notes)
	}
}

func TestOnceWithoutEndPassDoesNotRepeat(t *testing.T) {
	rec := &recording{}
	n := NewNotifier(rec, "Sync")
	for range 5 {
		n.Once(node("1"), "spec", "InvalidSpec", "bad spec")
	}
	if rec.count() != 1 {
		t.Fatalf("%d events, want 1", rec.count())
	}
}

func TestIncompletePassForgetsNothing(t *testing.T) {
	rec := &recording{}
	n := NewNotifier(rec, "Sync")
	n.Once(node("1"), "conflict/a", "TagConflict", "tag a differs")
	n.EndPass(true)
	n.EndPass(false) // e.g. the cloud could not be read
	n.Once(node("1"), "conflict/a", "TagConflict", "tag a differs")
	if rec.count() != 1 {
		t.Fatalf("an incomplete pass made a lasting problem be reported again: %v", rec.notes)
	}
}

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
