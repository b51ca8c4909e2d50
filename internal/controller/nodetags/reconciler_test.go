package nodetags_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/eventgrid/eventgridtest"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
	"github.com/tagsync/tagsync/internal/operator"
)

// TestAReconcilerFightIsStoppedAndNamed: a platform reconciler (AKS's
// node-pool reconcile) rewrites the pool's scale set to its declared tags
// after every other write, as its own application; armsim's Event Grid
// delivers to tagsync's webhook. A tag copied up from a label, taken away
// by a platform rewrite, is put back 3 times, each undone by the
// reconciler; then tagsync stops (RestoreStopped), naming the reconciler's
// application from the events' claims. The labels stay.
func TestAReconcilerFightIsStoppedAndNamed(t *testing.T) {
	g := eventgridtest.New(t, cloudchange.HubOptions{ResyncInterval: eventsResync, HealthEvery: 20 * time.Millisecond})
	h := newHarnessWith(t, func(h *harness) {
		h.eventOpts = operator.EventsOptions{Hub: g.Hub, Sources: []operator.EventSource{g.Source}}
	}, azure.WithCacheTTL(time.Hour), azure.WithOwnWrites(g.Hub.OwnWrites()))
	g.AwaitServing(t)
	g.Subscribe(t, h.env)
	pool := map[string]string{"env": "prod"}
	id := h.pool("reconciled", 2, pool)
	setLabel(h, "reconciled-0", "azure.tags/team", "blue")
	h.waitTag(id, "team", "blue")
	h.waitLabel("reconciled-1", "azure.tags/team", "blue")
	h.settled("reconciled")

	const aks = "7319c514-987d-4e9b-ac3d-d38c4f427f4c"
	if err := h.cloud.AddReconciler(armsim.Reconciler{Name: "aks", Scope: id, Tags: pool, AppID: aks}); err != nil {
		t.Fatal(err)
	}
	base := h.writes()
	if err := h.cloud.ReplaceTags(id, pool); err != nil { // the platform's first rewrite
		t.Fatal(err)
	}
	h.eventually("a RestoreStopped event naming the reconciler", func() string {
		for _, note := range h.events(nodetags.ReasonRestoreStopped, "reconciled") {
			if strings.Contains(note, aks) {
				return ""
			}
		}
		return "events: " + strings.Join(h.events(nodetags.ReasonRestoreStopped, "reconciled"), "; ")
	})
	if n := h.writes() - base; n != 3 {
		t.Errorf("%d writes before the node sync stopped, want 3 put-backs", n)
	}
	h.waitLabel("reconciled-0", "azure.tags/team", "blue")
	h.waitLabel("reconciled-1", "azure.tags/team", "blue")
}
