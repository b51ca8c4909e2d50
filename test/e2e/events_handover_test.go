package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

// handoverBound is how soon an acknowledged change is applied across a
// graceful leader stop (the goal: 90 s; Resource Graph lags 10 min).
const handoverBound = 90 * time.Second

// TestAnAcknowledgedChangeSurvivesALeaderStop runs two `tagsync run`
// replicas of the metadata controller with the Event Grid webhook behind
// one address, Resource Graph lagging tag changes by 10 minutes. A disk
// is given the classifier tag; its delivery is answered 200 while the
// leader's writes fail (503), and within a second of that 200 the leader
// is stopped (SIGTERM, as a rolling update does) with the write still in
// flight. The next leader's first full pass searches Resource Graph, which
// does not show the disk classified yet: only the change the stopping
// leader left on the Lease makes it read the disk. It carries the
// CloudMetadata's tag within 90 s.
func TestAnAcknowledgedChangeSurvivesALeaderStop(t *testing.T) {
	ctx := context.Background()
	const ns = "events-handover"
	ensureNamespace(ctx, t, ns)
	arm := armsimtest.Start(t, armsimtest.WithRetrySchedule(100*time.Millisecond))
	estate := armsimtest.ClusterEstate{Infra: "evho", PerType: 1, Tags: map[string]string{"kubernetes.io_cluster.evho": "owned"}}
	must(t, estate.Seed(arm.Server))
	procs, _, front := startEventReplicas(ctx, t, ns, "metadata", arm)
	leader, follower := waitForLeader(t, procs)

	addTagsToEstate(ctx, t, ns, "evho", arm.SubscriptionID, map[string]string{"env": "prod"}, estate.Tags)
	ids := estate.ResourceIDs()
	eventually(t, "env=prod on the estate", func() string { return envIs(t, arm, ids, "prod") })
	arm.Subscribe(t, "tagsync", armsimtest.WebHook("http://"+front.Addr()+"/eventgrid?key="+eventsKey))

	disk, err := arm.Server.CreateResource(arm.SubscriptionID, "rg-evho", armsim.Resource{Type: armsim.TypeDisk, Name: "evho-late-disk"})
	must(t, err)
	arm.Server.SetGraphIndexDelay(10 * time.Minute)
	arm.Server.AddFault(armsim.Fault{Operation: "Tags.UpdateAtScope", Status: 503})
	delivered := arm.Server.EventGridStats().Delivered
	must(t, arm.Server.SetTags(disk, estate.Tags)) // classified now: Resource Graph shows it in 10 min
	eventually(t, "the outside edit's delivery answered 200", func() string {
		if arm.Server.EventGridStats().Delivered <= delivered {
			return "not delivered yet"
		}
		return ""
	})
	stopped := time.Now()
	leader.stop(t) // SIGTERM right after the 200 was seen
	arm.Server.ClearFaults()
	t.Logf("%s got SIGTERM right after the 200 and exited %s later", leader.name, time.Since(stopped).Round(time.Millisecond))
	if !strings.Contains(leader.logs(), "left the unfinished changes to the next leader") {
		t.Errorf("%s did not log leaving its unfinished changes to the next leader:\n%s", leader.name, tail(leader.logs(), 30))
	}
	eventuallyWithin(t, handoverBound, "the newly classified disk tagged by the next leader", func() string {
		return envIs(t, arm, []string{disk}, "prod")
	})
	t.Logf("tagged %s after the stop, by %s", time.Since(stopped).Round(time.Millisecond), follower.name)
	if n := follower.metric(t, "tagsync_events_handed_over_total", `direction="taken"`); n < 1 {
		t.Errorf("%s took %v changes over, want at least 1", follower.name, n)
	}
}
