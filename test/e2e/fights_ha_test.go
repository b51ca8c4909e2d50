package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestAStoppedFightStaysStoppedAcrossAHandover runs the chart's topology, two
// `tagsync run` replicas with leader election, against armsim with a
// platform reconciler (as AKS's node-pool reconcile) that rewrites a scale
// set to its declared tags after every other write. A tag copied up from a
// Node's label is put back 3 times by the leader, each undone, and then no
// more (RestoreStopped). The leader is killed (SIGKILL); the follower
// takes over and reads the put-backs from the NodeTagSync's status
// (recentWrites), so it puts the tag back no more and reports the fight
// too; further passes write nothing.
func TestAStoppedFightStaysStoppedAcrossAHandover(t *testing.T) {
	ctx := context.Background()
	const ns, nts = "tagsync-fight-ha", "fight"
	cleanupSyncObjects(t)
	ensureNamespace(ctx, t, ns)
	writes := &armWrites{}
	cloud := armsimtest.Start(t, armsimtest.WithOptions(func(o *armsim.Options) { o.Logf = writes.logf }))
	s, sub := cloud.Server, cloud.SubscriptionID
	_, err := s.CreateResourceGroup(sub, armsim.ResourceGroup{Name: "MC_fight", Location: "westeurope"})
	must(t, err)
	pool := map[string]string{"env": "prod"}
	id, err := s.CreateScaleSet(sub, "MC_fight", armsim.ScaleSet{Name: "pool", Location: "westeurope", Tags: pool})
	must(t, err)
	instances, err := s.AddInstances(id, 2)
	must(t, err)
	for j, inst := range instances {
		must(t, kube.Client.Create(ctx, build.Node(fmt.Sprintf("fight-%d", j), build.ProviderID("azure://"+inst))))
	}
	must(t, kube.Client.Create(ctx, build.NodeTagSync(nts)))
	leader, follower := waitForLeader(t, startReplicas(t, ns, cloud, "fight-a", "fight-b"))

	must(t, mergePatch(ctx, kube.Client, build.Node("fight-0"), `{"metadata":{"labels":{"azure.tags/team":"blue"}}}`))
	waitARMTags(t, cloud, []string{id}, map[string]string{"team": "blue"})
	waitNodeTagSync(ctx, t, nts, "the label copied up and to the pool's other Node", func(st v1alpha1.NodeTagSyncStatus) bool {
		return readyWith(st, 2)
	})

	must(t, s.AddReconciler(armsim.Reconciler{Name: "aks", Scope: id, Tags: pool, AppID: "7319c514-987d-4e9b-ac3d-d38c4f427f4c"}))
	base := writes.successful()[strings.ToLower(id)]
	must(t, s.ReplaceTags(id, pool)) // the platform's first rewrite
	putBacks := func() int { return writes.successful()[strings.ToLower(id)] - base }
	stopped := fightUntilStopped(ctx, t, leader, nts, 0)
	first := putBacks()
	if first != 3 {
		t.Errorf("the leader put the tag back %d times before it stopped, want 3", first)
	}

	leader.kill()
	eventuallyWithin(t, haTakeoverBound+waitFor, follower.name+" to take over", func() string {
		if !follower.isLeader(t) {
			return "still a follower"
		}
		return ""
	})
	fightUntilStopped(ctx, t, follower, nts, stopped)
	second := putBacks() - first
	t.Logf("put-backs: %d by the first leader, %d by the second after the handover", first, second)
	if second != 0 {
		t.Errorf("the new leader put the tag back %d times, want none: the status holds the first leader's put-backs", second)
	}
	// Stopped: more passes write nothing.
	before := putBacks()
	for i := range 3 {
		forcedPass(ctx, t, follower, nts, fmt.Sprintf("after-%d", i))
	}
	if n := putBacks() - before; n != 0 {
		t.Errorf("%d more writes after both leaders stopped", n)
	}
}

// fightUntilStopped forces passes of the NodeTagSync by p until p has
// reported a RestoreStopped event beyond the stopped ones seen before, and
// returns how many there are.
func fightUntilStopped(ctx context.Context, t *testing.T, p *tagsyncProc, nts string, seen int) int {
	t.Helper()
	n := 0
	for i := 0; ; i++ {
		if n = restoreStopped(ctx, t, nts); n > seen {
			return n
		}
		if i == 10 {
			t.Fatalf("%s made 10 passes without stopping the fight", p.name)
		}
		forcedPass(ctx, t, p, nts, fmt.Sprintf("%s-%d", p.name, i))
	}
}

// forcedPass asks for a pass of the NodeTagSync and waits until p ran it.
func forcedPass(ctx context.Context, t *testing.T, p *tagsyncProc, nts, value string) {
	t.Helper()
	passes := p.metric(t, "tagsync_nodetags_passes_total", `nodetagsync="`+nts+`"`, `fresh="true"`)
	requestSync(ctx, t, nts, value)
	eventually(t, p.name+"'s pass for "+value, func() string {
		if n := p.metric(t, "tagsync_nodetags_passes_total", `nodetagsync="`+nts+`"`, `fresh="true"`); n <= passes {
			return fmt.Sprintf("fresh passes %v", n)
		}
		return ""
	})
}

// restoreStopped counts the RestoreStopped events about the NodeTagSync,
// their series included.
func restoreStopped(ctx context.Context, t *testing.T, nts string) int {
	t.Helper()
	var list eventsv1.EventList
	must(t, kube.Client.List(ctx, &list, client.InNamespace("default")))
	n := 0
	for _, e := range list.Items {
		if e.Reason == nodetags.ReasonRestoreStopped && e.Regarding.Name == nts {
			n++
			if e.Series != nil {
				n += int(e.Series.Count) - 1
			}
		}
	}
	return n
}
