package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/cloud/cloudtest"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// labelSyncCRDs installs Cluster API's Cluster and Machine CRDs (from the
// module go.mod requires) and the minimal Metal3 CRDs on the shared
// control plane, once.
var labelSyncCRDs = sync.OnceValue(func() error {
	env := shared.env
	dir, err := testenv.ModuleDir("sigs.k8s.io/cluster-api")
	if err != nil {
		return err
	}
	bases := filepath.Join(dir, "core", "config", "crd", "bases")
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{ErrorIfPathMissing: true, Paths: []string{
		filepath.Join(bases, "cluster.x-k8s.io_clusters.yaml"), filepath.Join(bases, "cluster.x-k8s.io_machines.yaml"),
		filepath.Join(env.RootDir, "test", "crds", "metal3")}})
	return err
})

// lsEstate is a label sync estate in a namespace of the shared control
// plane, which is its own workload cluster (Cluster "self").
type lsEstate struct {
	t     *testing.T
	env   *testenv.Env
	c     client.Client
	ns    string
	kc    string
	nodes []string
}

// newLSEstate seeds hosts h1 (Node n1: a label to change, one to add, one
// to remove, the pending taint), h2 (no consumer), h3 (Node n3 in sync),
// h4 (no nodeRef) and h5 (a cluster that does not answer), and the
// LabelSyncProfile racks.
func newLSEstate(t *testing.T) *lsEstate {
	t.Helper()
	e := newEmptyLSEstate(t)
	e.cluster("self", e.env.KubeConfig)
	e.cluster("dead", []byte("apiVersion: v1\nkind: Config\nclusters: [{name: d, cluster: {server: 'https://127.0.0.1:1'}}]\n"+
		"contexts: [{name: d, context: {cluster: d, user: u}}]\ncurrent-context: d\nusers: [{name: u, user: {token: x}}]\n"))
	pending := build.NoSchedule(v1alpha1.LabelSyncPendingTaintKey, "true")
	n1 := e.node("n1", map[string]string{"kubernetes.io/hostname": "n1", "rack.example.com/rack": "r0", "rack.example.com/old": "x",
		"other.example.com/keep": "1"}, pending)
	n3 := e.node("n3", map[string]string{"rack.example.com/rack": "r3"})
	racks := map[string]string{"sync": "racks"}
	e.machine(e.host("h1", racks, "rack.example.com/rack", "r1", "rack.example.com/row", "2", "other.example.com/keep", "9"), "self", n1)
	e.host("h2", racks, "rack.example.com/rack", "r2")
	e.machine(e.host("h3", racks, "rack.example.com/rack", "r3"), "self", n3)
	e.machine(e.host("h4", racks, "rack.example.com/rack", "r4"), "self", "")
	e.machine(e.host("h5", racks, "rack.example.com/rack", "r5"), "dead", "n5")
	e.create(build.LabelSyncProfile("racks", build.HostSelector(racks), build.Prefixes("rack.example.com")))
	return e
}

// newEmptyLSEstate is an estate in a new namespace, with nothing in it.
func newEmptyLSEstate(t *testing.T) *lsEstate {
	t.Helper()
	env, kc := kube(t)
	if err := labelSyncCRDs(); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: planScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &lsEstate{t: t, env: env, c: c, ns: newNamespace(t, env), kc: kc}
}

// create creates obj in the estate's namespace.
func (e *lsEstate) create(obj client.Object) {
	e.t.Helper()
	obj.SetNamespace(e.ns)
	if err := e.c.Create(context.Background(), obj); err != nil {
		e.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// cluster creates a provisioned Cluster on a Metal3Cluster, reached with
// kubeconfig.
func (e *lsEstate) cluster(name string, kubeconfig []byte) {
	e.t.Helper()
	e.create(build.KubeconfigSecret(name, kubeconfig))
	e.create(build.Metal3Cluster(name))
	c := build.Cluster(name, build.InfrastructureRef(metal3.Metal3ClusterGVK, name))
	e.create(c)
	c.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	if err := e.c.Status().Update(context.Background(), c); err != nil {
		e.t.Fatal(err)
	}
}

// node creates a Node named after the namespace, deleted with the test.
func (e *lsEstate) node(name string, labels map[string]string, taints ...corev1.Taint) string {
	e.t.Helper()
	n := build.Node(e.ns+"-"+name, build.Labels(labels), build.Taints(taints...))
	if err := e.c.Create(context.Background(), n); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), n) })
	e.nodes = append(e.nodes, n.Name)
	return n.Name
}

// host creates a BareMetalHost with the selector's labels and kv pairs.
func (e *lsEstate) host(name string, sel map[string]string, kv ...string) *metal3.BareMetalHost {
	e.t.Helper()
	labels := maps.Clone(sel)
	for i := 0; i+1 < len(kv); i += 2 {
		labels[kv[i]] = kv[i+1]
	}
	b := build.Object(&metal3.BareMetalHost{}, name, build.Labels(labels))
	e.create(b)
	return b
}

// machine links a host to a Metal3Machine owned by a Machine of cluster
// whose nodeRef is node ("": none yet).
func (e *lsEstate) machine(b *metal3.BareMetalHost, cluster, node string) {
	e.t.Helper()
	ctx := context.Background()
	name := b.Name + "-m"
	m := build.Machine(name, cluster, build.InfrastructureRef(metal3.Metal3MachineGVK, name))
	e.create(m)
	e.create(build.Metal3Machine(name, build.HostOf(e.ns, b.Name), build.MachineOwner(m)))
	if node != "" {
		m.Status.NodeRef = clusterv1.MachineNodeReference{Name: node}
		if err := e.c.Status().Update(ctx, m); err != nil {
			e.t.Fatal(err)
		}
	}
	b.Spec.ConsumerRef = build.ConsumerRef(e.ns, name)
	if err := e.c.Update(ctx, b); err != nil {
		e.t.Fatal(err)
	}
}

// versions are the resourceVersions of the estate's objects and Nodes and
// the number of its events: any write changes them.
func (e *lsEstate) versions() map[string]string {
	e.t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	lists := []client.ObjectList{&v1alpha1.LabelSyncProfileList{}, &metal3.BareMetalHostList{}, &clusterv1.MachineList{},
		&clusterv1.ClusterList{}, &corev1.SecretList{}}
	for _, l := range lists {
		if err := e.c.List(ctx, l, client.InNamespace(e.ns)); err != nil {
			e.t.Fatal(err)
		}
		items, err := metaItems(l)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, o := range items {
			out[fmt.Sprintf("%T/%s", l, o.GetName())] = o.GetResourceVersion()
		}
	}
	for name, n := range e.nodeObjects() {
		out["node/"+name] = n.ResourceVersion
	}
	var events eventsv1.EventList
	if err := e.c.List(ctx, &events, client.InNamespace(e.ns)); err != nil {
		e.t.Fatal(err)
	}
	out["events"] = fmt.Sprint(len(events.Items))
	return out
}

// nodeObjects reads the estate's Nodes.
func (e *lsEstate) nodeObjects() map[string]*corev1.Node {
	e.t.Helper()
	out := map[string]*corev1.Node{}
	for _, name := range e.nodes {
		n := &corev1.Node{}
		if err := e.c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
			e.t.Fatal(err)
		}
		out[name] = n
	}
	return out
}

// lsState renders the Nodes' labels and pending taints.
func lsState(nodes map[string]*corev1.Node) map[string]nodeState {
	out := map[string]nodeState{}
	for name, n := range nodes {
		s := nodeState{Labels: maps.Clone(n.Labels)}
		for _, tn := range n.Spec.Taints {
			s.Pending = s.Pending || tn.Key == v1alpha1.LabelSyncPendingTaintKey
		}
		out[name] = s
	}
	return out
}

// runLSPlan runs plan on the estate without clouds.
func (e *lsEstate) runLSPlan(args ...string) (string, error) {
	cmd, f := newPlanCommand()
	f.providers = func(context.Context, *planFlags) (cloud.Providers, error) { return cloud.NewProviders(), nil }
	out, errOut, err := runVerb(e.t.Context(), cmd, append([]string{"plan", "--kubeconfig=" + e.kc, "-n", e.ns}, args...)...)
	if err != nil {
		err = fmt.Errorf("%w\n%s", err, errOut)
	}
	return out, err
}

// TestPlanPredictsWhatLabelSyncWrites: plan's prediction for a
// LabelSyncProfile (the management cluster as its own workload cluster,
// one unreachable cluster) is exactly what the labelsync controller then
// writes on the Nodes, and plan itself writes nothing.
func TestPlanPredictsWhatLabelSyncWrites(t *testing.T) {
	e := newLSEstate(t)
	before := e.versions()
	out, err := e.runLSPlan("racks", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	plan := parsePlan(t, out)
	if len(plan.LabelSyncProfiles) != 1 {
		t.Fatalf("plan covers %d LabelSyncProfiles, want 1:\n%s", len(plan.LabelSyncProfiles), out)
	}
	assertLSPlan(t, e, plan.LabelSyncProfiles[0])
	assertLSText(t, e)
	if after := e.versions(); !equalMaps(before, after) {
		t.Fatalf("plan wrote:\nbefore %v\nafter  %v", before, after)
	}
	want := lsPredicted(lsState(e.nodeObjects()), plan.LabelSyncProfiles[0])

	e.startLabelSync()
	testenv.RequestPass(t, e.c, &v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "racks"}},
		v1alpha1.SyncRequestAnnotation, func(o client.Object) string { return o.(*v1alpha1.LabelSyncProfile).Status.LastSyncRequest }, planWait)
	testenv.Eventually(t, planWait, "the Nodes as plan predicted", func() string {
		if got := lsState(e.nodeObjects()); fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Sprintf("Nodes %v\nplan predicted %v", got, want)
		}
		return ""
	})
}

// assertLSPlan checks the prediction itself.
func assertLSPlan(t *testing.T, e *lsEstate, p profilePlan) {
	t.Helper()
	got, _ := json.Marshal(p)
	if p.Matched != 5 || p.InSync != 1 || len(p.Nodes) != 1 || p.writes() != 1 {
		t.Fatalf("plan of racks: %s; want 5 hosts, 1 in sync, 1 Node to write", got)
	}
	n := p.Nodes[0]
	var lines []string
	for _, c := range n.Labels {
		lines = append(lines, c.Op+c.Name)
	}
	if n.Name != e.ns+"-n1" || n.Host != "h1" || n.Cluster != e.ns+"/self" || !n.ReleaseTaint ||
		strings.Join(lines, " ") != "~rack.example.com/rack +rack.example.com/row" || fmt.Sprint(n.Held) != "[rack.example.com/old]" {
		t.Errorf("plan of node n1: %+v", n)
	}
	var waits []string
	for _, w := range p.Waiting {
		waits = append(waits, w.Host+":"+w.Reason)
	}
	if strings.Join(waits, " ") != "h2:NoConsumer h4:NoNodeRef h5:ClusterUnreachable" {
		t.Errorf("waiting hosts %v, want h2 NoConsumer, h4 NoNodeRef, h5 ClusterUnreachable", waits)
	}
}

// assertLSText checks the text form of the same plan.
func assertLSText(t *testing.T, e *lsEstate) {
	t.Helper()
	out, err := e.runLSPlan("racks")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan's text:\n%s", out)
	for _, want := range []string{
		"LabelSyncProfile " + e.ns + "/racks (prefixes rack.example.com; 5 host(s))",
		"  node " + e.ns + "-n1 of " + e.ns + "/self (host h1)\n" +
			"    ~ rack.example.com/rack: \"r0\" -> \"r1\"\n    + rack.example.com/row = \"2\"\n" +
			"    - taint labelsync.tagsync.io/pending:NoSchedule\n" +
			"    ! rack.example.com/old removal held for approval\n  1 node(s) in sync\n" +
			"  held for approval: 1 tag deletion(s)",
		"host h2 waits: NoConsumer",
		"host h5 waits: ClusterUnreachable (workload cluster " + e.ns + "/dead cannot be reached",
		"Plan: 1 write(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan's text does not say %q:\n%s", want, out)
		}
	}
}

// lsPredicted applies a profile's plan to the Nodes read before it.
func lsPredicted(before map[string]nodeState, p profilePlan) map[string]nodeState {
	out := maps.Clone(before)
	for _, nd := range p.Nodes {
		s := out[nd.Name]
		s.Labels = applyChanges(tags.CaseSensitive, tags.Set(s.Labels), nd.Labels)
		s.Pending = s.Pending && !nd.ReleaseTaint
		out[nd.Name] = s
	}
	return out
}

// startLabelSync runs the labelsync controller on the estate's namespace,
// as tagsync run starts it (the registry, through operator.Build).
func (e *lsEstate) startLabelSync() {
	e.t.Helper()
	env, _ := kube(e.t)
	mgr, err := operator.Build(e.t.Context(), env.Config, operator.Options{MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		Provider: cloudtest.New(azure.TagRules), Controllers: []string{labelsync.ControllerName}, Namespaces: []string{e.ns}})
	if err != nil {
		e.t.Fatal(err)
	}
	runManager(e.t, mgr, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}})
}

func TestSuspendedProfilePlansNoWrite(t *testing.T) {
	p := profilePlan{Nodes: []labelNodeDiff{{Name: "n1", Labels: []change{{Op: opAdd, Name: "rack.example.com/rack"}}}, {Name: "n2", ReleaseTaint: true}}}
	if got := p.writes(); got != 2 {
		t.Fatalf("an active profile plans %d write(s), want 2", got)
	}
	p.Suspended = true
	r := planReport{LabelSyncProfiles: []profilePlan{p}}
	if got := r.Writes(); got != 0 {
		t.Fatalf("a suspended profile plans %d write(s), want 0: its pass writes nothing", got)
	}
}

// TestPlanHoldsALabelRemovedFromManyNodes: five hosts whose labels the
// sync wrote on their Nodes are re-registered without one of them. The
// pass holds the five removals (one label leaving five Nodes), and plan,
// judging every Node's removals together as the pass does, shows the same
// five held, none as a removal, and why.
func TestPlanHoldsALabelRemovedFromManyNodes(t *testing.T) {
	e := newEmptyLSEstate(t)
	e.cluster("self", e.env.KubeConfig)
	sel := map[string]string{"sync": "zones"}
	var hosts []*metal3.BareMetalHost
	for i := range 5 {
		name := fmt.Sprintf("z%d", i)
		n := e.node(name, map[string]string{"kubernetes.io/hostname": name})
		h := e.host("h"+name, sel, "rack.example.com/rack", "r1", "rack.example.com/zone", "a")
		e.machine(h, "self", n)
		hosts = append(hosts, h)
	}
	e.create(build.LabelSyncProfile("zones", build.HostSelector(sel), build.Prefixes("rack.example.com")))
	e.startLabelSync()
	testenv.Eventually(t, planWait, "the zone label on the five Nodes", func() string {
		for name, n := range e.nodeObjects() {
			if n.Labels["rack.example.com/zone"] != "a" || n.Annotations[v1alpha1.LabelSyncRecordAnnotation] == "" {
				return fmt.Sprintf("node %s: labels %v, annotations %v", name, n.Labels, n.Annotations)
			}
		}
		return ""
	})
	for _, h := range hosts {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"rack.example.com/zone":null}}}`))
		if err := e.c.Patch(context.Background(), h, patch); err != nil {
			t.Fatal(err)
		}
	}
	// The first host's removal may reach its Node alone, in a pass of its
	// own (one Node of five is no mass removal); the rest are held.
	profile := &v1alpha1.LabelSyncProfile{}
	held := map[string]bool{}
	testenv.Eventually(t, planWait, "the pass holding the removals", func() string {
		if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "zones"}, profile); err != nil {
			return err.Error()
		}
		h := profile.Status.DeletionsHeld
		if h == nil {
			return "nothing held"
		}
		clear(held)
		for _, r := range h.Resources {
			held[r.Resource] = true
		}
		gone := 0
		for _, n := range e.nodeObjects() {
			if _, ok := n.Labels["rack.example.com/zone"]; !ok {
				gone++
			}
		}
		if len(held)+gone != 5 || len(held) < 3 {
			return fmt.Sprintf("%d Nodes lost the zone, %d held: %+v", gone, len(held), h)
		}
		return ""
	})

	out, err := e.runLSPlan("zones", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	plan := parsePlan(t, out).LabelSyncProfiles
	if len(plan) != 1 || len(plan[0].Nodes) != len(held) || !strings.Contains(plan[0].HeldReason, "rack.example.com/zone would leave 5 of the 5") {
		t.Fatalf("plan: %s\nwant %d Nodes with the zone removal held, and why", out, len(held))
	}
	for _, n := range plan[0].Nodes {
		if fmt.Sprint(n.Held) != "[rack.example.com/zone]" || len(n.Labels) != 0 || !held[fmt.Sprintf("node %s of cluster %s", n.Name, n.Cluster)] {
			t.Errorf("plan of node %s: held %v, changes %v; want zone held as the pass holds it (%v) and nothing written", n.Name, n.Held, n.Labels, held)
		}
	}
}
