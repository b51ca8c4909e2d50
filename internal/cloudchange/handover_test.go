package cloudchange

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// memHandover keeps a handover in memory (the operator keeps it on the
// leader-election Lease).
type memHandover struct{ left []Change }

func (m *memHandover) Take(context.Context) ([]Change, error) {
	out := m.left
	m.left = nil
	return out, nil
}

func (m *memHandover) Leave(_ context.Context, changes []Change) error {
	m.left = changes
	return nil
}

func ids(changes []Change) []string {
	var out []string
	for _, c := range changes {
		out = append(out, c.ID)
	}
	slices.Sort(out)
	return out
}

// A stopping hub leaves what it acknowledged and did not finish — queued,
// waiting for a pass, or whose pass failed — and the next leader's hub
// routes it first; what a pass finished is not handed over.
func TestAStoppingHubLeavesWhatItDidNotFinishToTheNext(t *testing.T) {
	m := &memHandover{}
	owners := map[string][]string{"/ss/a": {"sync-a"}, "/ss/b": {"sync-b"}, "/ss/c": {"sync-c"}}
	h := NewHub(HubOptions{Capacity: 10, Handover: m})
	sub := h.Subscribe("nodetags", &routes{owners: owners})
	for _, c := range []Change{change("waiting", "/ss/a"), change("failed", "/ss/b"), change("finished", "/ss/c")} {
		if err := h.Publish([]Change{c}, nil); err != nil {
			t.Fatal(err)
		}
	}
	h.Drain()
	sub.Started("sync-b")(errors.New("throttled"))
	sub.Started("sync-c")(nil)
	if err := h.Publish([]Change{change("queued", "/ss/a")}, nil); err != nil {
		t.Fatal(err)
	}

	h.leave(context.Background())
	if got, want := ids(m.left), []string{"failed", "queued", "waiting"}; !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}

	next := NewHub(HubOptions{Capacity: 10, Handover: m})
	r := &routes{owners: owners}
	next.Subscribe("nodetags", r)
	next.takeOver(context.Background())
	next.Drain()
	if got, want := ids(r.routed), []string{"failed", "queued", "waiting"}; !slices.Equal(got, want) {
		t.Errorf("the next leader routed %v, want %v", got, want)
	}
	if len(m.left) != 0 {
		t.Errorf("the handover still holds %v after it was taken", ids(m.left))
	}
}
