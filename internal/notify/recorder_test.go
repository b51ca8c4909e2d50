package notify_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestRecorderReportsRefusedEvents: against the real API server, an event
// whose note is over the limit is refused and the listener hears of it; a
// fitted note is accepted and stored.
func TestRecorderReportsRefusedEvents(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	rec, err := notify.NewRecorder(env.Config, env.Scheme, "tagsync-test")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = rec.Start(ctx) }()
	var mu sync.Mutex
	var refused []string
	rec.OnRefused(func(uid, reason, note string) {
		mu.Lock()
		defer mu.Unlock()
		refused = append(refused, uid+"/"+reason)
	})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "events-node"}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 2*notify.MaxNoteBytes)
	rec.Eventf(node, nil, corev1.EventTypeWarning, "TooLong", "Sync", "%s", long)
	rec.Eventf(node, nil, corev1.EventTypeWarning, "Fitted", "Sync", "%s", notify.Fit(long))
	testenv.Eventually(t, 30*time.Second, "the refusal reported and the fitted event stored", func() string {
		mu.Lock()
		got := strings.Join(refused, ",")
		mu.Unlock()
		if got != string(node.UID)+"/TooLong" {
			return "refused: " + got
		}
		var list eventsv1.EventList
		if err := env.Client.List(ctx, &list); err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			if e.Reason == "Fitted" && e.Regarding.UID == node.UID {
				return ""
			}
		}
		return "the fitted event is not stored"
	})
}

// TestRecorderKeepsEachNote: client-go's broadcaster folds events of one
// object (at one resourceVersion), type, reason and action into a series
// that keeps its first note. Through the Recorder a second note is stored
// as an event of its own, and a repeat of the first note still folds into
// its series.
func TestRecorderKeepsEachNote(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	rec, err := notify.NewRecorder(env.Config, env.Scheme, "tagsync-test")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = rec.Start(ctx) }()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "notes-node"}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	// The second note is recorded only once the recorder is started (it
	// writes past the broadcaster); wait for the first to be stored.
	rec.Eventf(node, nil, corev1.EventTypeNormal, "Retained", "Sync", "1 label kept")
	notes := func() map[string]int32 {
		var list eventsv1.EventList
		if err := env.Client.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		got := map[string]int32{}
		for _, e := range list.Items {
			if e.Regarding.UID == node.UID && e.Reason == "Retained" {
				got[e.Note] = 1
				if e.Series != nil {
					got[e.Note] = e.Series.Count
				}
			}
		}
		return got
	}
	testenv.Eventually(t, 30*time.Second, "the first note stored", func() string {
		if notes()["1 label kept"] == 0 {
			return fmt.Sprintf("notes %v", notes())
		}
		return ""
	})
	rec.Eventf(node, nil, corev1.EventTypeNormal, "Retained", "Sync", "2 labels kept")
	rec.Eventf(node, nil, corev1.EventTypeNormal, "Retained", "Sync", "1 label kept")
	testenv.Eventually(t, 30*time.Second, "both notes stored, the first as a series of 2", func() string {
		if got := notes(); got["2 labels kept"] != 1 || got["1 label kept"] != 2 {
			return fmt.Sprintf("notes and counts %v", got)
		}
		return ""
	})
}
