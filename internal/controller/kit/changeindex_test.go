package kit

import (
	"slices"
	"testing"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

// TestChangeIndex: a change of a resource goes to every object that found
// it except the one whose own write made it; an object whose two targets
// found a resource keeps it until both let go; changes held while an
// index warms are routed once the object indexed.
func TestChangeIndex(t *testing.T) {
	x := ChangeIndex[string]{Name: func(s string) string { return s }}
	x.Add("a", "/r1")
	x.Add("a", "/r1") // a second target
	x.Add("b", "/r1", "/r2")
	objs, found := x.Route("/r1", cloudchange.Change{Resource: "/r1", EchoOf: "b"})
	if !found || !slices.Equal(objs, []string{"a"}) {
		t.Fatalf("routed to %v (found %t), want a alone: b's own write", objs, found)
	}
	if ids, _ := x.Pending.Take("a"); !slices.Equal(ids, []string{"/r1"}) {
		t.Fatalf("a's pending %v", ids)
	}
	if ids, _ := x.Pending.Take("b"); len(ids) != 0 {
		t.Fatalf("b's pending %v: the echo of its own write", ids)
	}
	x.Remove("a", "/r1")
	if objs, _ := x.Route("/r1", cloudchange.Change{Resource: "/r1"}); len(objs) != 2 {
		t.Fatalf("after one of a's targets let go: %v, want a and b", objs)
	}
	x.Remove("a", "/r1")
	x.Remove("b", "/r1", "/r2")
	if x.Found("/r1") || x.Found("/r2") {
		t.Fatal("a resource nobody found any more is still indexed")
	}

	x.Warm.Begin("c")
	x.Warm.Hold(cloudchange.Change{Resource: "/r3"})
	var replayed []string
	x.Replay("c", func(c cloudchange.Change) { replayed = append(replayed, c.Resource) })
	if !slices.Equal(replayed, []string{"/r3"}) {
		t.Fatalf("replayed %v, want the change held while c's index warmed", replayed)
	}
}
