package labelsync_test

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/cloud/cloudtest"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// waitFor bounds every wait of the suite.
const waitFor = 60 * time.Second

func TestMain(m *testing.M) { testenv.Main(m, nil) }

// crdDirs are the CRDs the management cluster needs: Cluster API's Cluster
// and Machine from the module go.mod requires, and the minimal Metal3 CRDs.
func crdDirs(t testing.TB) []string {
	t.Helper()
	dir, err := testenv.ModuleDir("sigs.k8s.io/cluster-api")
	if err != nil {
		t.Fatal(err)
	}
	bases := filepath.Join(dir, "core", "config", "crd", "bases")
	return []string{
		filepath.Join(bases, "cluster.x-k8s.io_clusters.yaml"),
		filepath.Join(bases, "cluster.x-k8s.io_machines.yaml"),
		filepath.Join("test", "crds", "metal3"),
	}
}

// planes are the suite's two control planes: mgmt holds the hosts, Cluster
// API objects and profiles (and is a workload cluster too); workload is
// another cluster's API server, reached through a kubeconfig Secret.
type planes struct {
	mgmt, workload       *testenv.Env
	mgmtC, workloadC     client.Client
	mgmtKube, workloadKC []byte
}

// scheme knows the built-in types, tagsync's API, Cluster API and the
// BareMetalHost.
func scheme(t testing.TB) *runtime.Scheme {
	s := testenv.Scheme()
	if err := clusterv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := metal3.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// startPlanes starts the management and workload control planes.
func startPlanes(t *testing.T) *planes {
	t.Helper()
	mgmt, workload := testenv.StartPair(t, testenv.Options{ExtraCRDDirs: crdDirs(t)})
	s := scheme(t)
	p := &planes{mgmt: mgmt, workload: workload, mgmtKube: mgmt.KubeConfig, workloadKC: workload.KubeConfig}
	var err error
	if p.mgmtC, err = client.New(mgmt.Config, client.Options{Scheme: s}); err != nil {
		t.Fatal(err)
	}
	if p.workloadC, err = client.New(workload.Config, client.Options{Scheme: s}); err != nil {
		t.Fatal(err)
	}
	return p
}

var namespaces atomic.Int64

// harness is one test's namespace in the management cluster and its own
// controller manager (watching only that namespace).
type harness struct {
	t    *testing.T
	ctx  context.Context
	p    *planes
	c    client.Client // management cluster
	ns   string
	stop func()
}

// newHarness makes a namespace and starts the labelsync controller, as
// `tagsync run` starts it (the registry, through operator.Build).
func newHarness(t *testing.T, p *planes) *harness {
	t.Helper()
	return newHarnesses(t, p, 1)[0]
}

// newNamespace makes a namespace, without a controller.
func newNamespace(t *testing.T, p *planes) *harness {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), p: p, c: p.mgmtC, ns: fmt.Sprintf("ls-%d-%d", time.Now().UnixNano()%1e6, namespaces.Add(1))}
	if err := p.mgmtC.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}); err != nil {
		t.Fatal(err)
	}
	return h
}

// newHarnesses makes n namespaces and starts one labelsync controller
// watching all of them; each harness creates objects in its own namespace.
func newHarnesses(t *testing.T, p *planes, n int) []*harness {
	t.Helper()
	hs := make([]*harness, n)
	names := make([]string, n)
	for i := range hs {
		hs[i] = newNamespace(t, p)
		names[i] = hs[i].ns
	}
	h := hs[0]
	h.start(names)
	t.Cleanup(func() { h.stop() })
	for _, o := range hs[1:] {
		o.stop = h.stop
	}
	return hs
}

// start starts a labelsync controller watching namespaces.
func (h *harness) start(namespaces []string) {
	h.t.Helper()
	mgr, err := operator.Build(h.ctx, h.p.mgmt.Config, operator.Options{
		MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		Provider:    cloudtest.New(azure.TagRules),
		Controllers: []string{labelsync.ControllerName},
		Namespaces:  namespaces,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.stop = testenv.StartManager(h.ctx, h.t, mgr)
}

// restart stops the harness's controller and starts another for its
// namespace, as a new leader takes over: nothing the old one kept in
// memory is left.
func (h *harness) restart() {
	h.t.Helper()
	h.stop()
	h.start([]string{h.ns})
}

// create creates obj in the test's namespace of the management cluster.
func (h *harness) create(obj client.Object) {
	h.t.Helper()
	obj.SetNamespace(h.ns)
	if err := h.c.Create(h.ctx, obj); err != nil {
		h.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// update changes an object with fn, retrying on conflicts.
func (h *harness) update(c client.Client, obj client.Object, fn func()) {
	h.t.Helper()
	testenv.Update(h.ctx, h.t, c, obj, fn)
}

// updateStatus changes an object's status with fn, retrying on conflicts.
func (h *harness) updateStatus(obj client.Object, fn func()) {
	h.t.Helper()
	testenv.UpdateStatus(h.ctx, h.t, h.c, obj, fn)
}

// cluster creates a workload cluster reached with kubeconfig: its Secret,
// Metal3Cluster (with annotations) and Cluster, marked provisioned.
func (h *harness) cluster(name string, kubeconfig []byte, annotations map[string]string) *clusterv1.Cluster {
	h.t.Helper()
	h.create(build.KubeconfigSecret(name, kubeconfig))
	h.create(build.Metal3Cluster(name, build.Annotations(annotations)))
	c := build.Cluster(name, build.InfrastructureRef(metal3.Metal3ClusterGVK, name))
	h.create(c)
	h.updateStatus(c, func() { c.Status.Initialization.InfrastructureProvisioned = ptr.To(true) })
	return c
}

// host creates a BareMetalHost with labels.
func (h *harness) host(name string, labels map[string]string) *metal3.BareMetalHost {
	h.t.Helper()
	b := build.Object(&metal3.BareMetalHost{}, name, build.Labels(labels))
	h.create(b)
	return b
}

// machine makes a host the consumer's: a Metal3Machine owned by a Machine
// of cluster whose nodeRef is node ("": none yet), and the host's
// consumerRef to the Metal3Machine.
func (h *harness) machine(b *metal3.BareMetalHost, cluster, node string) *clusterv1.Machine {
	h.t.Helper()
	name := b.Name + "-m"
	m := build.Machine(name, cluster, build.InfrastructureRef(metal3.Metal3MachineGVK, name))
	h.create(m)
	h.metal3Machine(b, m)
	if node != "" {
		h.nodeRef(m, node)
	}
	h.update(h.c, b, func() {
		b.Spec.ConsumerRef = build.ConsumerRef(h.ns, name)
	})
	return m
}

// metal3Machine creates the Metal3Machine of a Machine, naming its host.
func (h *harness) metal3Machine(b *metal3.BareMetalHost, m *clusterv1.Machine) {
	h.t.Helper()
	h.create(build.Metal3Machine(m.Spec.InfrastructureRef.Name, build.HostOf(h.ns, b.Name), build.MachineOwner(m)))
}

// nodeRef sets a Machine's status.nodeRef.
func (h *harness) nodeRef(m *clusterv1.Machine, node string) {
	h.t.Helper()
	h.updateStatus(m, func() { m.Status.NodeRef = clusterv1.MachineNodeReference{Name: node} })
}

// node creates a Node in a cluster, named after the test's namespace.
func (h *harness) node(c client.Client, name string, labels map[string]string, taints ...corev1.Taint) string {
	h.t.Helper()
	name = h.ns + "-" + name
	n := build.Node(name, build.Labels(labels), build.Taints(taints...))
	if err := c.Create(h.ctx, n); err != nil {
		h.t.Fatalf("create node %s: %v", name, err)
	}
	h.t.Cleanup(func() { _ = c.Delete(context.Background(), n) })
	return name
}

// syncedHost sets up the common case and waits until it is in sync: the
// workload cluster alpha, its Node n1, the host h1 (rack r1) on that Node,
// and the profile p1 syncing rack.example.com labels. It returns the host
// and the Node's name.
func (h *harness) syncedHost(p *planes) (*metal3.BareMetalHost, string) {
	h.t.Helper()
	h.cluster("alpha", p.workloadKC, nil)
	node := h.node(p.workloadC, "n1", nil)
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	h.machine(b, "alpha", node)
	h.profile("p1", "rack.example.com")
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r1"})
	return b, node
}

// profile creates a LabelSyncProfile selecting hosts labelled sync=<name>.
func (h *harness) profile(name string, prefixes ...string) *v1alpha1.LabelSyncProfile {
	h.t.Helper()
	p := build.LabelSyncProfile(name, build.HostSelector(map[string]string{"sync": name}), build.Prefixes(prefixes...))
	h.create(p)
	return p
}

// pass asks for one pass over the profile and waits for exactly it.
func (h *harness) pass(name string) *v1alpha1.LabelSyncProfile {
	h.t.Helper()
	return testenv.Pass(h.t, h.c, &v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}}, waitFor)
}

// labels reads a Node's labels.
func (h *harness) labels(c client.Client, node string) map[string]string {
	h.t.Helper()
	var n corev1.Node
	if err := c.Get(h.ctx, types.NamespacedName{Name: node}, &n); err != nil {
		h.t.Fatal(err)
	}
	return n.Labels
}

// waitLabels waits until the Node's labels are exactly want.
func (h *harness) waitLabels(c client.Client, node string, want map[string]string) {
	h.t.Helper()
	testenv.Eventually(h.t, waitFor, "labels of node "+node, func() string {
		var n corev1.Node
		if err := c.Get(h.ctx, types.NamespacedName{Name: node}, &n); err != nil {
			return err.Error()
		}
		if !maps.Equal(n.Labels, want) {
			return fmt.Sprintf("labels %v, want %v", n.Labels, want)
		}
		return ""
	})
}

// waitStatus waits until the profile's status satisfies ok (which returns
// "" when it does) for its current generation.
func (h *harness) waitStatus(name string, ok func(v1alpha1.LabelSyncProfileStatus) string) *v1alpha1.LabelSyncProfile {
	h.t.Helper()
	p := &v1alpha1.LabelSyncProfile{}
	testenv.Eventually(h.t, waitFor, "status of LabelSyncProfile "+name, func() string {
		if err := h.c.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: name}, p); err != nil {
			return err.Error()
		}
		if p.Status.ObservedGeneration != p.Generation {
			return fmt.Sprintf("observed generation %d of %d", p.Status.ObservedGeneration, p.Generation)
		}
		return ok(p.Status)
	})
	return p
}

// ready is a waitStatus check: Ready has status want.
func ready(want metav1.ConditionStatus) func(v1alpha1.LabelSyncProfileStatus) string {
	return func(s v1alpha1.LabelSyncProfileStatus) string {
		c := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != want {
			return fmt.Sprintf("Ready is %+v, want %s; status %+v", c, want, s)
		}
		return ""
	}
}

// events lists the events about an object of the test's namespace.
func (h *harness) events(name string) []eventsv1.Event {
	h.t.Helper()
	var list eventsv1.EventList
	if err := h.c.List(h.ctx, &list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits for an event of the reason about the object.
func (h *harness) waitEvent(name, reason string) eventsv1.Event {
	h.t.Helper()
	var got eventsv1.Event
	testenv.Eventually(h.t, waitFor, "a "+reason+" event about "+name, func() string {
		for _, e := range h.events(name) {
			if e.Reason == reason {
				got = e
				return ""
			}
		}
		return fmt.Sprintf("events: %v", reasons(h.events(name)))
	})
	return got
}

// reasons lists events' type and reason.
func reasons(es []eventsv1.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Type + " " + e.Reason + ": " + e.Note
	}
	return out
}

// kubeconfigVia returns kubeconfig with every cluster's server replaced by
// server (a proxy in front of the API server).
func kubeconfigVia(t testing.TB, kubeconfig []byte, server string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
