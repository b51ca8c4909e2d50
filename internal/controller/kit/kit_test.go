package kit

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/notify"
)

// refusingRecorder records events and lets a test refuse one, as the API
// server does when it rejects an event.
type refusingRecorder struct {
	sent      int
	listeners []func(uid, reason, note string)
}

func (r *refusingRecorder) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {
	r.sent++
}

func (r *refusingRecorder) OnRefused(f func(uid, reason, note string)) {
	r.listeners = append(r.listeners, f)
}

func (r *refusingRecorder) refuse(uid, reason, note string) {
	for _, f := range r.listeners {
		f(uid, reason, note)
	}
}

type state struct {
	notes *notify.Notifier
	n     int
}

func TestStatesLiveAsLongAsTheirObject(t *testing.T) {
	s := NewStates[string](&refusingRecorder{}, "Sync", func(n *notify.Notifier) *state { return &state{notes: n} })
	a := s.For("a", "uid-1")
	a.n = 7
	if got := s.For("a", "uid-1"); got != a || got.n != 7 {
		t.Fatalf("the same object got a new state: %+v", got)
	}
	if got := s.For("a", "uid-2"); got == a || got.n != 0 {
		t.Fatalf("an object recreated under the name kept the old state: %+v", got)
	}
	s.Forget("a")
	if _, ok := s.Get("a"); ok || s.Len() != 0 {
		t.Fatalf("a forgotten object still has a state (%d states)", s.Len())
	}
}

func TestStatesTellEveryNotifierOfARefusedEvent(t *testing.T) {
	rec := &refusingRecorder{}
	s := NewStates[string](rec, "Sync", func(n *notify.Notifier) *state { return &state{notes: n} })
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}
	st := s.For("a", "uid-1")
	st.notes.Once(node, "k", "Reason", "note")
	st.notes.Once(node, "k", "Reason", "note")
	if rec.sent != 1 {
		t.Fatalf("%d events for one problem, want 1", rec.sent)
	}
	rec.refuse("node-uid", "Reason", "note")
	st.notes.Once(node, "k", "Reason", "note")
	if rec.sent != 2 {
		t.Fatalf("%d events: a refused problem was not told again", rec.sent)
	}
}

func TestBackoffDoublesUntilTheSpecChanges(t *testing.T) {
	var b Backoff
	every := 10 * time.Minute
	for i, want := range []time.Duration{10 * time.Minute, 20 * time.Minute, MaxPersonBackoff, MaxPersonBackoff} {
		if got := b.Failed("gen-1", every); got != want {
			t.Fatalf("failure %d: wait %s, want %s", i+1, got, want)
		}
	}
	if got := b.Failed("gen-2", every); got != every {
		t.Fatalf("after a spec change: wait %s, want %s", got, every)
	}
	b.Failed("gen-2", every)
	b.Reset()
	if got := b.Failed("gen-2", every); got != every {
		t.Fatalf("after a pass without such errors: wait %s, want %s", got, every)
	}
	if got := b.Failed("gen-3", time.Hour); got != time.Hour {
		t.Fatalf("an interval longer than the ceiling: wait %s, want the interval", got)
	}
}

func TestInFlightUntilTheCacheShowsANewerVersion(t *testing.T) {
	var f InFlight[string]
	f.Mark("n1", "5")
	if !f.Stale("n1", "5") {
		t.Fatal("the version our write replaced is not stale")
	}
	if f.Stale("n1", "6") || f.Len() != 0 {
		t.Fatalf("a newer version is stale, or the record stayed (%d)", f.Len())
	}
	f.Mark("n2", "1")
	f.Forget("n2")
	if f.Stale("n2", "1") {
		t.Fatal("a forgotten Node is still in flight")
	}
}

func TestInFlightRecognisesOnlyTheExactEchoOfAWrite(t *testing.T) {
	var f InFlight[string]
	f.Expect("n1", "5", NodePatch{Annotations: map[string]string{"a": "1"}})
	if !f.Replaced("n1", "5") || f.Replaced("n1", "6") || !f.Has("n1") {
		t.Fatal("Replaced answers wrongly, or dropped the record on a newer version")
	}
	made := func(p NodePatch) bool { return p.Annotations["a"] == "1" }
	if f.Echo("n1", "4", made) || f.Echo("n1", "5", func(NodePatch) bool { return false }) {
		t.Fatal("an update from another version, or not made of the write, is its echo")
	}
	if !f.Echo("n1", "5", made) || f.Has("n1") {
		t.Fatal("the write's echo is not recognised, or its record stays")
	}
}

func TestReleaseTaint(t *testing.T) {
	pending := corev1.Taint{Key: "p", Effect: corev1.TaintEffectNoSchedule}
	other := corev1.Taint{Key: "o", Effect: corev1.TaintEffectNoExecute}
	if got := ReleaseTaint([]corev1.Taint{other}, "p"); got != nil {
		t.Fatalf("a Node without the taint gets taints %v, want none to write", got)
	}
	if got := ReleaseTaint([]corev1.Taint{pending}, "p"); got == nil || len(got) != 0 {
		t.Fatalf("releasing the only taint gives %v, want an empty list", got)
	}
	if got := ReleaseTaint([]corev1.Taint{other, pending}, "p"); len(got) != 1 || got[0].Key != "o" {
		t.Fatalf("releasing the pending taint gives %v, want the other taint", got)
	}
	if HasTaint([]corev1.Taint{{Key: "p", Effect: corev1.TaintEffectNoExecute}}, "p") {
		t.Fatal("a NoExecute taint of the key counts as the NoSchedule one")
	}
}

func TestStampSyncTime(t *testing.T) {
	at := func(s int) *metav1.Time { v := metav1.NewTime(time.Unix(int64(s), 0)); return &v }
	every := 10 * time.Second
	for _, c := range []struct {
		name       string
		prev, next *metav1.Time
		unchanged  bool
		want       *metav1.Time
	}{
		{"steady within the interval", at(100), at(105), true, at(100)},
		{"steady after the interval", at(100), at(110), true, at(110)},
		{"another field changed", at(100), at(101), false, at(101)},
		{"none stored", nil, at(101), true, at(101)},
	} {
		if got := StampSyncTime(c.prev, c.next, c.unchanged, every); !got.Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestUpdateChanged(t *testing.T) {
	p := UpdateChanged(func(a, b *corev1.Node) bool { return a.Labels["x"] != b.Labels["x"] })
	n := func(x string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"x": x}}}
	}
	if p.Update(event.UpdateEvent{ObjectOld: n("1"), ObjectNew: n("1")}) {
		t.Error("an update that changed nothing read passed")
	}
	if !p.Update(event.UpdateEvent{ObjectOld: n("1"), ObjectNew: n("2")}) {
		t.Error("an update of what is read was dropped")
	}
	if !p.Create(event.CreateEvent{Object: n("1")}) || !p.Update(event.UpdateEvent{ObjectOld: &corev1.Pod{}, ObjectNew: &corev1.Pod{}}) {
		t.Error("a create, or an update of another type, was dropped")
	}
}

func TestRequiredVersion(t *testing.T) {
	obj := func(v string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: "default", Annotations: map[string]string{v1alpha1.RequiresVersionAnnotation: v}}
	}
	for _, c := range []struct {
		want, running string
		refused       bool
	}{
		{"0.3.0", "0.2.0", true},
		{"0.3.0", "v0.3.0", false},
		{"0.3.0", "0.3.1-rc.1", false},
		{"0.3.0", "0.0.0-20261128081206-10ad75f0a1b2", false}, // unreleased
		{"0.3.0", "dev", false},
		{"not-a-version", "0.3.0", true},
	} {
		err := RequiredVersion("NodeTagSync", obj(c.want), c.running)
		if (err != nil) != c.refused {
			t.Errorf("requires %s, running %s: %v, want refused %v", c.want, c.running, err, c.refused)
		}
	}
	if err := RequiredVersion("NodeTagSync", &metav1.ObjectMeta{}, "0.1.0"); err != nil {
		t.Errorf("no annotation: %v", err)
	}
}
