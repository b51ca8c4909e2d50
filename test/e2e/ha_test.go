package e2e_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// Leader election timing of the HA test's processes.
const (
	haLeaseDuration = 4 * time.Second
	haRenewDeadline = 3 * time.Second
	haRetryPeriod   = 1 * time.Second
	// haTakeoverBound is the longest a follower may need to take over from a
	// killed leader. The follower counts the lease duration from the moment
	// it last saw the leader renew, and it looks at the Lease every retry
	// period stretched by client-go's jitter (factor 1.2, so up to 2.2
	// periods): it may see the last renewal up to one jittered period late
	// and see the expiry up to one jittered period late. A second more
	// covers process scheduling on a loaded 2-core machine.
	haTakeoverBound = haLeaseDuration + 2*haRetryPeriod*22/10 + time.Second
)

// TestFailoverAfterKillNineConvergesWithoutRepeatedWrites runs two `tagsync
// run` replicas with leader election against one API server and one armsim
// (HTTPS, client-secret auth), as the chart's Deployment does. It checks that
// only the leader acts; makes changes on both sides (labels to export to 7
// resources, portal edits to import) with a slowed-down ARM so a pass takes
// a while; kills the leader with SIGKILL once it has written some but not
// all tags; and then checks that the follower takes over within the lease
// duration (plus the retry slack above), that the cluster converges, that
// every change was written to ARM exactly once (no write repeated by the new
// leader), and that further forced passes write nothing, in ARM or on the
// Nodes (no oscillation).
func TestFailoverAfterKillNineConvergesWithoutRepeatedWrites(t *testing.T) {
	ctx := context.Background()
	const ns = "tagsync-ha"
	cleanupSyncObjects(t)
	ensureNamespace(ctx, t, ns)
	writes := &armWrites{}
	cloud := armsimtest.Start(t, armsimtest.WithOptions(func(o *armsim.Options) { o.Logf = writes.logf }))
	e := seedHA(t, cloud)
	must(t, kube.Client.Create(ctx, build.NodeTagSync("ha")))

	procs := startReplicas(t, ns, cloud, "replica-a", "replica-b")

	leader, follower := waitForLeader(t, procs)
	e.waitSynced(t, "the initial sync")
	e.expectLabels(t)
	if n := writes.total(); n != 0 {
		t.Fatalf("the initial sync (tags only in the cloud) wrote %d times to ARM, want 0", n)
	}
	if n := follower.metric(t, "tagsync_nodetags_passes_total"); n > 0 {
		t.Fatalf("the follower %s ran %v sync passes while %s led", follower.name, n, leader.name)
	}
	holder := leaseHolder(ctx, t, ns)

	// Slow ARM down so the pass that writes the 7 tags takes > 1 s, then
	// change both sides and ask for a pass.
	cloud.Server.SetLatency(150 * time.Millisecond)
	e.makeChanges(t)
	requestSync(ctx, t, "ha", "after-changes")

	eventuallyWithin(t, waitFor, "the leader's first ARM write of the pass", func() string {
		if writes.total() == 0 {
			return "no write yet"
		}
		return ""
	})
	leader.kill()
	killedAt := time.Now()
	atKill := writes.total()
	if atKill >= len(e.exports) {
		t.Fatalf("the leader wrote all %d tags before it was killed: the pass was not interrupted (slow ARM down more)", atKill)
	}
	t.Logf("killed %s (kill -9) after %d of %d ARM writes", leader.name, atKill, len(e.exports))

	eventuallyWithin(t, haTakeoverBound+time.Second, follower.name+" to take over", func() string {
		if !follower.isLeader(t) {
			return "still a follower"
		}
		return ""
	})
	takeover := time.Since(killedAt)
	if takeover > haTakeoverBound {
		t.Fatalf("%s took over %s after the kill, want at most %s (lease %s + retry slack)", follower.name, takeover, haTakeoverBound, haLeaseDuration)
	}
	if now := leaseHolder(ctx, t, ns); now == holder {
		t.Fatalf("the Lease is still held by %s", holder)
	}
	t.Logf("%s took over %s after the kill (bound %s)", follower.name, takeover.Round(time.Millisecond), haTakeoverBound)
	cloud.Server.SetLatency(0)

	e.waitSynced(t, "convergence after the failover")
	e.expectLabels(t)
	e.expectTags(t)
	byResource := writes.successful()
	for id := range e.exports {
		if n := byResource[id]; n != 1 {
			t.Errorf("%s: %d successful ARM writes for one change, want exactly 1", id, n)
		}
	}
	for id, n := range byResource {
		if _, ok := e.exports[id]; !ok {
			t.Errorf("%s: %d ARM writes, want none (nothing on its Nodes changed)", id, n)
		}
	}
	if failed := writes.failed(); len(failed) > 0 {
		t.Logf("ARM writes that did not take effect (cut off by the kill): %v", failed)
	}

	// No oscillation: forced fresh passes change nothing anywhere.
	versions := e.nodeVersions(t)
	before := writes.total()
	for i := range 3 {
		passes := follower.metric(t, "tagsync_nodetags_passes_total", `nodetagsync="ha"`, `fresh="true"`, `result="ok"`)
		requestSync(ctx, t, "ha", fmt.Sprintf("steady-%d", i))
		eventually(t, "a forced pass by the new leader", func() string {
			if n := follower.metric(t, "tagsync_nodetags_passes_total", `nodetagsync="ha"`, `fresh="true"`, `result="ok"`); n <= passes {
				return fmt.Sprintf("fresh passes %v, want more than %v", n, passes)
			}
			return ""
		})
	}
	if n := writes.total(); n != before {
		t.Fatalf("forced passes over a converged cluster wrote %d times to ARM", n-before)
	}
	if after := e.nodeVersions(t); !maps.Equal(after, versions) {
		t.Fatalf("forced passes over a converged cluster wrote Nodes: resourceVersions %v -> %v", versions, after)
	}
	e.expectLabels(t)
	e.expectTags(t)
	checkAzureRoleCovers(t, writes.operations())
}

// azureRoleActions maps the ARM operations the controller may call (armsim's
// names) to the Azure RBAC action each needs. docs/install-aks.md builds the
// custom role from exactly these actions; if the controller starts calling
// something else, this list, the role and the doc must change together.
var azureRoleActions = map[string]string{
	"VirtualMachines.List":         "Microsoft.Compute/virtualMachines/read",
	"VirtualMachines.Get":          "Microsoft.Compute/virtualMachines/read",
	"VirtualMachineScaleSets.List": "Microsoft.Compute/virtualMachineScaleSets/read",
	"VirtualMachineScaleSets.Get":  "Microsoft.Compute/virtualMachineScaleSets/read",
	"Tags.UpdateAtScope":           "Microsoft.Resources/tags/write",
}

// checkAzureRoleCovers fails when the controller called an ARM operation
// the documented Azure role does not allow (token requests are not ARM).
func checkAzureRoleCovers(t *testing.T, ops []string) {
	t.Helper()
	actions := map[string]bool{}
	for _, op := range ops {
		if strings.HasPrefix(op, "Identity.") {
			continue
		}
		action, ok := azureRoleActions[op]
		if !ok {
			t.Errorf("the controller called the ARM operation %s, which the Azure role in docs/install-aks.md does not cover: "+
				"extend azureRoleActions, the role and the doc together", op)
			continue
		}
		actions[action] = true
	}
	t.Logf("ARM operations called: %v; Azure actions they need: %v", ops, slices.Sorted(maps.Keys(actions)))
}

// haEstate is the HA test's cloud and cluster, with what each should carry.
type haEstate struct {
	ctx   context.Context
	cloud *armsimtest.Env
	// nodes maps a Node to the resource behind it (lower-case ARM ID).
	nodes map[string]string
	// tags is what every resource should carry, labels what every Node
	// should carry under azure.tags/.
	tags   map[string]map[string]string
	labels map[string]map[string]string
	// exports are the resources that get a tag from their Nodes' labels.
	exports map[string]bool
}

// seedHA creates 6 Uniform scale sets of 2 instances and 4 standalone VMs,
// all tagged, and their 16 Nodes (without labels).
func seedHA(t *testing.T, cloud *armsimtest.Env) *haEstate {
	e := &haEstate{ctx: context.Background(), cloud: cloud, nodes: map[string]string{},
		tags: map[string]map[string]string{}, labels: map[string]map[string]string{}, exports: map[string]bool{}}
	s, sub := cloud.Server, cloud.SubscriptionID
	_, err := s.CreateResourceGroup(sub, armsim.ResourceGroup{Name: "MC_ha", Location: "westeurope"})
	must(t, err)
	for i := range 6 {
		tags := map[string]string{"env": "prod", "pool": strconv.Itoa(i)}
		id, err := s.CreateScaleSet(sub, "MC_ha", armsim.ScaleSet{Name: fmt.Sprintf("pool%d", i), Location: "westeurope", Tags: tags})
		must(t, err)
		instances, err := s.AddInstances(id, 2)
		must(t, err)
		e.tags[strings.ToLower(id)] = maps.Clone(tags)
		for j, inst := range instances {
			e.addNode(t, fmt.Sprintf("pool%d-%d", i, j), inst, id)
		}
	}
	for i := range 4 {
		tags := map[string]string{"role": fmt.Sprintf("vm%d", i)}
		id, err := s.CreateVM(sub, "MC_ha", armsim.VirtualMachine{Name: fmt.Sprintf("vm%d", i), Tags: tags})
		must(t, err)
		e.tags[strings.ToLower(id)] = maps.Clone(tags)
		e.addNode(t, fmt.Sprintf("vm%d", i), id, id)
	}
	return e
}

func (e *haEstate) addNode(t *testing.T, name, providerResource, resource string) {
	must(t, kube.Client.Create(e.ctx, build.Node(name, build.ProviderID("azure://"+providerResource))))
	e.nodes[name] = strings.ToLower(resource)
}

// makeChanges labels the Nodes of 3 scale sets and 4 VMs (tags to export:
// one ARM write each) and edits tags of 3 other scale sets and the 4 VMs in
// the portal (labels to import: no ARM write).
func (e *haEstate) makeChanges(t *testing.T) {
	for name, id := range e.nodes {
		var key, value string
		switch {
		case strings.HasPrefix(name, "pool0-"), strings.HasPrefix(name, "pool1-"), strings.HasPrefix(name, "pool2-"):
			key, value = "tier", "gold-"+name[4:5]
		case strings.HasPrefix(name, "vm"):
			key, value = "owner", "team-"+name[2:]
		default:
			continue
		}
		must(t, mergePatch(e.ctx, kube.Client, nodeRef(name), fmt.Sprintf(`{"metadata":{"labels":{"azure.tags/%s":%q}}}`, key, value)))
		e.tags[id][key] = value
		e.exports[id] = true
	}
	for id := range e.tags {
		var key, value string
		switch {
		case strings.HasSuffix(id, "/pool3"), strings.HasSuffix(id, "/pool4"), strings.HasSuffix(id, "/pool5"):
			key, value = "env", "stage-"+id[len(id)-1:]
		case strings.Contains(id, "/virtualmachines/vm"):
			key, value = "cost", "cc-"+id[len(id)-1:]
		default:
			continue
		}
		must(t, e.cloud.Server.SetTags(id, map[string]string{key: value}))
		e.tags[id][key] = value
	}
}

// expected labels of a Node: its resource's tags under azure.tags/.
func (e *haEstate) expectedLabels(node string) map[string]string {
	out := map[string]string{}
	for k, v := range e.tags[e.nodes[node]] {
		out["azure.tags/"+k] = v
	}
	return out
}

// expectLabels checks every Node carries exactly its resource's tags.
func (e *haEstate) expectLabels(t *testing.T) {
	t.Helper()
	eventually(t, "every Node's azure.tags labels", func() string {
		for name := range e.nodes {
			got := map[string]string{}
			for k, v := range nodeLabels(e.ctx, t, name) {
				if strings.HasPrefix(k, "azure.tags/") {
					got[k] = v
				}
			}
			if want := e.expectedLabels(name); !maps.Equal(got, want) {
				return fmt.Sprintf("%s has %v, want %v", name, got, want)
			}
		}
		return ""
	})
}

// expectTags checks every resource carries exactly the expected tags.
func (e *haEstate) expectTags(t *testing.T) {
	t.Helper()
	for id, want := range e.tags {
		got, err := e.cloud.Server.Tags(id)
		must(t, err)
		if !maps.Equal(got, want) {
			t.Fatalf("%s has tags %v, want %v", id, got, want)
		}
	}
}

// waitSynced waits until NodeTagSync ha is Ready with all 16 Nodes synced,
// no conflict and no error.
func (e *haEstate) waitSynced(t *testing.T, what string) {
	t.Helper()
	waitNodeTagSync(e.ctx, t, "ha", what, func(st v1alpha1.NodeTagSyncStatus) bool {
		return readyWith(st, len(e.nodes)) && st.ConflictCount == 0 && st.ErrorCount == 0
	})
}

// nodeVersions maps each Node to its resourceVersion.
func (e *haEstate) nodeVersions(t *testing.T) map[string]string {
	var list corev1.NodeList
	must(t, kube.Client.List(e.ctx, &list))
	out := map[string]string{}
	for _, n := range list.Items {
		out[n.Name] = n.ResourceVersion
	}
	return out
}

// requestSync sets the sync-request annotation of a NodeTagSync.
func requestSync(ctx context.Context, t testing.TB, name, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.SyncRequestAnnotation, value)
	must(t, mergePatch(ctx, kube.Client, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: name}}, patch))
}

// leaderLease is the Lease `tagsync run` elects its leader with in ns.
func leaderLease(ns string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tagsync-leader"}}
}

// leaseHolder is the holder of the leader Lease in ns.
func leaseHolder(ctx context.Context, t testing.TB, ns string) string {
	t.Helper()
	l := leaderLease(ns)
	must(t, kube.Client.Get(ctx, client.ObjectKeyFromObject(l), l))
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// armWrites counts the ARM writes armsim served, per resource, and the
// operations it served, from its request log (one line per request, written
// once the request is done).
type armWrites struct {
	mu   sync.Mutex
	ok   map[string]int      // resource (lower-case ID) -> successful writes
	fail map[string][]string // resource -> statuses of writes that failed
	ops  map[string]bool     // every operation served
}

// writeOps are armsim's operation names for tag writes.
var writeOps = map[string]bool{
	"Tags.UpdateAtScope": true, "Tags.CreateOrUpdateAtScope": true, "Tags.DeleteAtScope": true,
	"VirtualMachines.Update": true, "VirtualMachineScaleSets.Update": true, "VirtualMachineScaleSetVMs.Update": true,
}

// logf receives armsim's "armsim: METHOD PATH -> OPERATION STATUS" lines.
func (w *armWrites) logf(_ string, args ...any) {
	if len(args) != 4 {
		return
	}
	op := fmt.Sprint(args[2])
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ok == nil {
		w.ok, w.fail, w.ops = map[string]int{}, map[string][]string{}, map[string]bool{}
	}
	w.ops[op] = true
	if !writeOps[op] {
		return
	}
	path := strings.ToLower(fmt.Sprint(args[1]))
	path = strings.TrimSuffix(path, "/providers/microsoft.resources/tags/default")
	status, _ := strconv.Atoi(fmt.Sprint(args[3]))
	if status >= 200 && status < 300 {
		w.ok[path]++
	} else {
		w.fail[path] = append(w.fail[path], fmt.Sprint(args[2], " ", status))
	}
}

func (w *armWrites) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.ok {
		n += c
	}
	return n
}

func (w *armWrites) successful() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.ok)
}

// operations lists the operations served, sorted.
func (w *armWrites) operations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.ops))
}

func (w *armWrites) failed() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for id, s := range w.fail {
		out = append(out, id+": "+strings.Join(s, ", "))
	}
	slices.Sort(out)
	return out
}

// startReplicas starts a `tagsync run` replica per name with leader
// election in ns (the HA test's timing) on armsim.
func startReplicas(t *testing.T, ns string, cloud *armsimtest.Env, names ...string) []*tagsyncProc {
	t.Helper()
	args := append([]string{
		"--kubeconfig=" + writeKubeconfig(t, ""),
		"--leader-elect", "--leader-election-namespace=" + ns,
		"--lease-duration=" + haLeaseDuration.String(), "--renew-deadline=" + haRenewDeadline.String(),
		"--retry-period=" + haRetryPeriod.String(), "--zap-log-level=debug",
	}, armsimFlags(t, cloud)...)
	procs := make([]*tagsyncProc, len(names))
	for i, name := range names {
		procs[i] = startTagsync(t, name, args...)
	}
	return procs
}

// waitForLeader waits until one of two replicas leads (its
// leader_election_master_status is 1) and returns it and the other.
func waitForLeader(t *testing.T, procs []*tagsyncProc) (leader, follower *tagsyncProc) {
	t.Helper()
	eventually(t, "one of the two replicas to lead", func() string {
		switch a, b := procs[0].isLeader(t), procs[1].isLeader(t); {
		case a && b:
			t.Fatal("both replicas report leader_election_master_status 1")
		case a:
			leader, follower = procs[0], procs[1]
		case b:
			leader, follower = procs[1], procs[0]
		default:
			return "no leader yet"
		}
		return ""
	})
	return leader, follower
}
