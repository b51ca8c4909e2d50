package notify_test

import (
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
