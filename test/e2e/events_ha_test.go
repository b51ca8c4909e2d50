package e2e_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// Bounds of the two-replica events test: an edit reaches its label within
// haEditBound while a leader serves (Event Grid's first retry comes 10 s
// after a refused delivery), and within haEditBound of the takeover across
// a leader kill.
const haEditBound = 5 * time.Second

// haAttackedEditBound bounds an edit while someone keeps rewriting the
// Lease: a delivery the follower cannot hand to the verified leader within
// its wait is answered 503, and Event Grid retries 10 s later.
const haAttackedEditBound = time.Minute

// TestEveryDeliveryReachesTheLeaderWithTwoReplicas runs the chart's shape:
// two `tagsync run` replicas with leader election and the Event Grid
// webhook, behind one round-robin address (each delivery to the next
// replica in turn), and armsim's Event Grid with its real retry schedule
// (10 s, 30 s, 1 min, ...). The leader advertises its webhook's address on
// the Lease (and records its leader election event, as without the
// address). The NodeTagSync polls hourly, so only events
// explain label changes. 12 portal edits one after another each reach their
// Node's label within 5 s, although half the deliveries land on the
// follower: it forwards them to the leader. Then the leader is killed
// (SIGKILL) and 6 more edits, one a second, are made while the follower takes over: their
// deliveries, refused by nobody, are held by the follower until it leads
// and reach the labels right after the takeover, although a stranger has
// taken the dead leader's address: its 200 is not the leader's, and it
// never receives the caller's key. Between the two, someone keeps writing
// a stranger's address on the Lease: 12 edits still reach their labels, and
// the stranger receives no credential. Event Grid never retries, but while
// the Lease is being rewritten.
func TestEveryDeliveryReachesTheLeaderWithTwoReplicas(t *testing.T) {
	ctx := context.Background()
	const ns = "tagsync-events-ha"
	cleanupSyncObjects(t)
	ensureNamespace(ctx, t, ns)
	arm := armsimtest.Start(t) // Event Grid's real retry schedule
	pools := seedEditPools(t, arm, 6)
	must(t, kube.Client.Create(ctx, build.NodeTagSync("events-ha", build.ResyncInterval(time.Hour))))

	procs, hooks, front := startEventReplicas(ctx, t, ns, "nodetags", arm)

	leader, follower := waitForLeader(t, procs)
	leaderHook := hooks[0]
	if leader == procs[1] {
		leaderHook = hooks[1]
	}
	lease := leaderLease(ns)
	must(t, kube.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease))
	if got := lease.Annotations[operator.WebhookAddressAnnotation]; got != leaderHook {
		t.Errorf("the Lease advertises the webhook address %q, want the leader's %q", got, leaderHook)
	}
	eventually(t, "the leader election event in "+ns, func() string {
		var list corev1.EventList
		must(t, kube.Client.List(ctx, &list, client.InNamespace(ns)))
		for _, e := range list.Items {
			if e.Reason == "LeaderElection" && e.InvolvedObject.Kind == "Lease" {
				return ""
			}
		}
		return fmt.Sprintf("none among %d events", len(list.Items))
	})
	waitNodeTagSync(ctx, t, "events-ha", "the initial sync, events on", func(st v1alpha1.NodeTagSyncStatus) bool {
		return readyWithEvents(st, len(pools))
	})
	arm.Subscribe(t, "tagsync", armsimtest.WebHook("http://"+front.Addr()+"/eventgrid?key="+eventsKey))

	// 12 edits one after another, each awaited.
	var took []time.Duration
	for i := range 12 {
		pool := pools[i%len(pools)]
		value := fmt.Sprintf("served-%d", i)
		start := time.Now()
		must(t, arm.Server.SetTags(pool.id, map[string]string{"edit": value}))
		eventuallyWithin(t, haEditBound, fmt.Sprintf("edit %d on Node %s", i, pool.node), func() string {
			return labelIs(ctx, t, pool.node, value)
		})
		took = append(took, time.Since(start))
	}
	t.Logf("portal edit → label with %s leading: %s", leader.name, spread(took))
	if n := follower.metric(t, "tagsync_eventgrid_deliveries_total", `result="forwarded"`); n < 1 {
		t.Errorf("%s forwarded %v deliveries, want at least 1 (the round robin sent it %v)", follower.name, n, front.Served())
	}
	noFailedDeliveries(t, arm, "while "+leader.name+" led")

	// Someone with update rights on Leases keeps writing a stranger's
	// address on the Lease: the follower hands it no credential, and no
	// edit is lost to the stranger's 200.
	rewritten := newStranger(t, "127.0.0.1:0")
	stopRewriting := rewriteWebhookAddress(t, ns, rewritten.addr)
	attackedAt := time.Now()
	for i := range 2 * len(pools) { // two edits per scale set, one a second
		must(t, arm.Server.SetTags(pools[i%len(pools)].id, map[string]string{"edit": fmt.Sprintf("rewritten-%d", i)}))
		pause(time.Second)
	}
	eventuallyWithin(t, haAttackedEditBound, "the edits made with the Lease rewritten on their Nodes", func() string {
		for i, pool := range pools {
			if msg := labelIs(ctx, t, pool.node, fmt.Sprintf("rewritten-%d", i+len(pools))); msg != "" {
				return msg
			}
		}
		return ""
	})
	attacked := time.Since(attackedAt)
	rewrites := stopRewriting()
	t.Logf("Lease rewritten %d times; 12 edits on their labels %s after the first; the stranger received %d requests, %d with the caller's credential",
		rewrites, attacked.Round(time.Millisecond), rewritten.received(), rewritten.withCredential())
	rewritten.wantNoCredential(t)
	if rewritten.received() == 0 {
		t.Error("the stranger on the rewritten Lease received nothing: the test did not try what it is about")
	}
	eventually(t, "the leader's own address back on the Lease", func() string {
		must(t, kube.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease))
		if got := lease.Annotations[operator.WebhookAddressAnnotation]; got != leaderHook {
			return "the Lease advertises " + got
		}
		return ""
	})
	idle, cancelIdle := context.WithTimeout(ctx, 2*time.Minute)
	must(t, arm.Server.WaitEventGridIdle(idle)) // the attacked phase's retries are not the takeover's
	cancelIdle()
	afterAttack := arm.Server.EventGridStats()

	// The leader killed, its Pod's address taken by a stranger before the
	// Lease expires (the Service drops the dead replica); edits while the
	// follower takes over.
	leader.kill()
	killedAt := time.Now()
	front.Remove(leaderHook)
	taken := newStranger(t, leaderHook)
	type edit struct {
		pool  editPool
		value string
		at    time.Time
	}
	var edits []edit
	for i := range len(pools) { // one edit per scale set
		pool := pools[i]
		e := edit{pool: pool, value: fmt.Sprintf("takeover-%d", i), at: time.Now()}
		must(t, arm.Server.SetTags(pool.id, map[string]string{"edit": e.value}))
		edits = append(edits, e)
		pause(time.Second)
	}
	var tookOver time.Time
	eventuallyWithin(t, haTakeoverBound+time.Second, follower.name+" to take over", func() string {
		if !follower.isLeader(t) {
			return "still a follower"
		}
		tookOver = time.Now()
		return ""
	})
	t.Logf("%s took over %s after the kill", follower.name, tookOver.Sub(killedAt).Round(time.Millisecond))
	arrived := map[string]time.Time{}
	eventuallyWithin(t, haEditBound, "the edits made during the takeover on their Nodes", func() string {
		for _, e := range edits {
			if _, ok := arrived[e.value]; ok {
				continue
			}
			if msg := labelIs(ctx, t, e.pool.node, e.value); msg != "" {
				return msg
			}
			arrived[e.value] = time.Now()
		}
		return ""
	})
	var during []time.Duration
	for _, e := range edits {
		wait := arrived[e.value].Sub(e.at)
		during = append(during, wait)
		if late := arrived[e.value].Sub(tookOver); late > haEditBound {
			t.Errorf("edit %s reached its label %s after the edit, %s after the takeover (bound %s)", e.value,
				wait.Round(time.Millisecond), late.Round(time.Millisecond), haEditBound)
		}
	}
	t.Logf("portal edit → label across the takeover: %s", spread(during))
	t.Logf("the stranger at the dead leader's address received %d requests, %d with the caller's credential",
		taken.received(), taken.withCredential())
	taken.wantNoCredential(t)
	if taken.received() == 0 {
		t.Error("the stranger at the dead leader's address received nothing: the test did not try what it is about")
	}
	if n := follower.metric(t, "tagsync_eventgrid_untrusted_leader_total"); n < 1 {
		t.Errorf("%s counted %v unverified leaders, want at least 1", follower.name, n)
	}
	noFailedDeliveriesSince(t, arm, afterAttack, "across the leader kill")
	if n := follower.metric(t, "tagsync_eventgrid_refused_total", `reason="no_leader"`); n != 0 {
		t.Errorf("%s gave up on %v deliveries for want of a leader, want none", follower.name, n)
	}
}

// startEventReplicas starts the chart's shape: two `tagsync run` replicas
// of controllers with leader election at the HA test timing in ns (each
// with its Pod object and peer token) and the Event Grid webhook on a port
// of its own, behind one round-robin front (the Service), which it
// returns with the replicas and their webhook addresses.
func startEventReplicas(ctx context.Context, t *testing.T, ns, controllers string, arm *armsimtest.Env) ([]*tagsyncProc, []string, *testenv.RoundRobin) {
	t.Helper()
	hooks := freeAddrs(t, 2)
	args := append([]string{"--kubeconfig=" + writeKubeconfig(t, ""), "--controllers=" + controllers,
		"--leader-elect", "--leader-election-namespace=" + ns,
		"--lease-duration=" + haLeaseDuration.String(), "--renew-deadline=" + haRenewDeadline.String(),
		"--retry-period=" + haRetryPeriod.String(), "--zap-log-level=debug",
		"--events-webhook-secret-file=" + tempFile(t, "events-secret", eventsKey+"\n")},
		armsimFlags(t, arm)...)
	var procs []*tagsyncProc
	for i, name := range []string{"replica-a", "replica-b"} {
		procs = append(procs, startTagsync(t, name, append(slices.Clip(args), "--events-webhook-bind-address="+hooks[i],
			"--events-webhook-peer-token-file="+replicaPod(ctx, t, ns, name, "tagsync"))...))
	}
	front, err := testenv.StartRoundRobin(hooks...)
	must(t, err)
	t.Cleanup(func() { _ = front.Close() })
	return procs, hooks, front
}

// noFailedDeliveries fails the test when Event Grid had to retry or drop a
// delivery.
func noFailedDeliveries(t *testing.T, arm *armsimtest.Env, when string) {
	t.Helper()
	noFailedDeliveriesSince(t, arm, armsim.EventGridStats{}, when)
}

// noFailedDeliveriesSince is noFailedDeliveries counting from before.
func noFailedDeliveriesSince(t *testing.T, arm *armsimtest.Env, before armsim.EventGridStats, when string) {
	t.Helper()
	st := arm.Server.EventGridStats()
	st.FailedAttempts -= before.FailedAttempts
	st.Dropped -= before.Dropped
	if st.FailedAttempts != 0 || st.Dropped != 0 {
		t.Errorf("%s: Event Grid counts %d failed delivery attempts and %d dropped events (%d delivered), want none: "+
			"each waits for a retry (10 s, 30 s, ...)", when, st.FailedAttempts, st.Dropped, st.Delivered)
	}
}

// editPool is a scale set of one instance and that instance's Node.
type editPool struct{ id, node string }

// seedEditPools creates n scale sets of one instance each, and their Nodes.
func seedEditPools(t *testing.T, arm *armsimtest.Env, n int) []editPool {
	t.Helper()
	s, sub := arm.Server, arm.SubscriptionID
	_, err := s.CreateResourceGroup(sub, armsim.ResourceGroup{Name: "MC_events_ha", Location: "westeurope"})
	must(t, err)
	var out []editPool
	for i := range n {
		id, err := s.CreateScaleSet(sub, "MC_events_ha", armsim.ScaleSet{Name: fmt.Sprintf("edit%d", i), Location: "westeurope",
			Tags: map[string]string{"env": "prod"}})
		must(t, err)
		instances, err := s.AddInstances(id, 1)
		must(t, err)
		node := fmt.Sprintf("edit%d-0", i)
		must(t, kube.Client.Create(context.Background(), build.Node(node, build.ProviderID("azure://"+instances[0]))))
		out = append(out, editPool{id: id, node: node})
	}
	return out
}

// labelIs returns "" when Node name carries azure.tags/edit=value.
func labelIs(ctx context.Context, t testing.TB, name, value string) string {
	t.Helper()
	if got := nodeLabels(ctx, t, name)["azure.tags/edit"]; got != value {
		return fmt.Sprintf("Node %s has azure.tags/edit=%q, want %q", name, got, value)
	}
	return ""
}

// spread summarises durations: min, median, max.
func spread(ds []time.Duration) string {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("%d edits, min %s, median %s, max %s", len(s), r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]))
}

// pause spaces the edits (a measurement schedule, not synchronisation).
func pause(d time.Duration) { <-time.After(d) }

// stranger is a server at an address the follower may be pointed at: it
// answers every request 200 (as a relay of its answer would make Event
// Grid count the delivery done) and records whether a request carried the
// caller's credential (the key, in the URL or a header, or a bearer token).
type stranger struct {
	srv       *http.Server
	addr      string
	mu        sync.Mutex
	requests  int
	credented int
}

// newStranger serves at addr (":0" ports pick one), retrying while the
// address is still held by a process being killed.
func newStranger(t *testing.T, addr string) *stranger {
	t.Helper()
	s := &stranger{}
	var ln net.Listener
	eventually(t, "listening at "+addr, func() string {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return err.Error()
		}
		return ""
	})
	s.addr = ln.Addr().String()
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		if strings.Contains(r.URL.String(), eventsKey) || strings.Contains(fmt.Sprint(r.Header), eventsKey) || r.Header.Get("Authorization") != "" {
			s.credented++
		}
		s.mu.Unlock()
		rw.WriteHeader(http.StatusOK)
	})}
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

func (s *stranger) received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func (s *stranger) withCredential() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.credented
}

// wantNoCredential fails the test when the stranger received a credential.
func (s *stranger) wantNoCredential(t *testing.T) {
	t.Helper()
	if n := s.withCredential(); n != 0 {
		t.Errorf("the stranger at %s received the caller's credential %d times", s.addr, n)
	}
}

// rewriteWebhookAddress keeps writing addr as the webhook address on the
// leader-election Lease in ns, as someone with update rights on Leases
// could (the leader writes its own back at each renewal), until the
// returned stop is called; stop returns how many rewrites succeeded.
func rewriteWebhookAddress(t *testing.T, ns, addr string) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		n := 0
		defer func() { done <- n }()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			lease := leaderLease(ns)
			if err := kube.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease); err == nil &&
				lease.Annotations[operator.WebhookAddressAnnotation] != addr {
				lease.Annotations[operator.WebhookAddressAnnotation] = addr
				if kube.Client.Update(ctx, lease) == nil {
					n++
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() int { cancel(); return <-done }
}
