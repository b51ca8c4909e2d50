package benchkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv"
)

// The label sync estate's names: the management namespace; the profile's
// two prefixes; the one LabelSyncProfile (hosts carry
// MetalSelectorLabel=MetalProfileName).
const (
	MetalNamespace     = "metal"
	RackPrefix         = "rack.example.com"
	SecurityPrefix     = "security.example.com"
	MetalProfileName   = "racks"
	MetalSelectorLabel = "labelsync"
	// seedWorkers is how many objects the harness creates at once.
	seedWorkers = 16
)

// MetalOptions size the label sync estate.
type MetalOptions struct {
	// Clusters is the number of workload clusters, HostsPer the
	// BareMetalHosts (and Nodes) in each.
	Clusters, HostsPer int
	// NodeImages is the number of container images in each Node's status.
	NodeImages int
	// StartAtOnce is how many control planes start at once.
	StartAtOnce int
	// MgmtOptions are the management control plane's (its CRDs are added).
	MgmtOptions testenv.Options
}

// Metal is the label sync estate (bench/labelsync, bench/sizing): a
// management control plane with Cluster API's and minimal Metal3 CRDs and
// one control plane per workload cluster; in the management cluster's
// namespace MetalNamespace, per workload cluster its kubeconfig Secret,
// Metal3Cluster and Cluster and per host a BareMetalHost, Metal3Machine
// and Machine (status.nodeRef); in each workload cluster one Node per host.
type Metal struct {
	MetalOptions
	Mgmt *testenv.Env
	// C is the harness's client of the management cluster.
	C         client.Client
	Workloads []*Workload
	// Want are the in-scope labels each host carries (and its Node must),
	// by workload cluster index and host index.
	Want [][]map[string]string
}

// Workload is one workload cluster: its control plane, a clientset and
// the harness's watch of its Nodes.
type Workload struct {
	Name  string
	Env   *testenv.Env
	Kube  kubernetes.Interface
	Nodes *Watch
}

func ClusterName(c int) string    { return fmt.Sprintf("wc-%02d", c) }
func HostName(c, h int) string    { return fmt.Sprintf("%s-host-%03d", ClusterName(c), h) }
func MachineName(c, h int) string { return fmt.Sprintf("%s-worker-%03d", ClusterName(c), h) }
func NodeName(h int) string       { return fmt.Sprintf("worker-%03d", h) } // Node names repeat across clusters, as they do
func InitialLabels(c, h int) map[string]string {
	return map[string]string{
		RackPrefix + "/row":       fmt.Sprintf("r%02d", h/10),
		RackPrefix + "/zone":      fmt.Sprintf("z%d", (c+h)%3),
		SecurityPrefix + "/level": fmt.Sprintf("l%d", h%2),
	}
}

// NodeKey is a Node's key in its watch (cluster-scoped: "/name").
func NodeKey(host int) string { return "/" + NodeName(host) }

// InScope reports whether a label is under the estate's prefixes.
func InScope(label string) bool {
	p, _, ok := strings.Cut(label, "/")
	return ok && (p == RackPrefix || p == SecurityPrefix)
}

// StartMetal starts the management control plane (with the Cluster API
// and Metal3 CRDs) and the workload ones, o.StartAtOnce at a time, and
// makes the harness's clients. The Metal it returns holds whatever
// started, also with an error (Close stops it).
func StartMetal(o MetalOptions) (*Metal, error) {
	m := &Metal{MetalOptions: o}
	crds, err := managementCRDs()
	if err != nil {
		return m, err
	}
	start := time.Now()
	Logf("starting 1 management + %d workload control planes (kube-apiserver + etcd each, %d at once)", o.Clusters, o.StartAtOnce)
	m.Workloads = make([]*Workload, o.Clusters)
	envs := make([]*testenv.Env, o.Clusters+1)
	errs := make([]error, len(envs))
	sem := make(chan struct{}, max(1, o.StartAtOnce))
	var wg sync.WaitGroup
	for i := range envs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			opts := testenv.Options{}
			if i == 0 {
				opts = o.MgmtOptions
				opts.ExtraCRDDirs = append(append([]string{}, opts.ExtraCRDDirs...), crds...)
			}
			envs[i], errs[i] = testenv.NewWith(opts)
		})
	}
	wg.Wait()
	m.Mgmt = envs[0]
	for i := range m.Workloads {
		if envs[i+1] != nil {
			m.Workloads[i] = &Workload{Name: ClusterName(i), Env: envs[i+1]}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return m, err
	}
	Logf("control planes up in %s", time.Since(start).Round(time.Millisecond))
	return m, m.clients()
}

// managementCRDs are Cluster API's Cluster and Machine CRDs (from the
// module go.mod requires) and the minimal Metal3 CRDs of test/crds.
func managementCRDs() ([]string, error) {
	dir, err := testenv.ModuleDir("sigs.k8s.io/cluster-api")
	if err != nil {
		return nil, err
	}
	bases := filepath.Join(dir, "core", "config", "crd", "bases")
	return []string{
		filepath.Join(bases, "cluster.x-k8s.io_clusters.yaml"),
		filepath.Join(bases, "cluster.x-k8s.io_machines.yaml"),
		filepath.Join("test", "crds", "metal3"),
	}, nil
}

// clients makes the harness's clients: generous client-side limits, so the
// harness never waits for its own rate limiter.
func (m *Metal) clients() error {
	s := m.Mgmt.Scheme
	if err := clusterv1.AddToScheme(s); err != nil {
		return err
	}
	if err := metal3.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(Fast(m.Mgmt.Config), client.Options{Scheme: s})
	if err != nil {
		return err
	}
	m.C = c
	for _, w := range m.Workloads {
		if w.Kube, err = kubernetes.NewForConfig(Fast(w.Env.Config)); err != nil {
			return err
		}
	}
	return nil
}

// Fast is cfg with client-side limits the harness never reaches.
func Fast(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 1000, 2000
	return c
}

// WatchNodes starts the harness's watch of every workload cluster's
// Nodes (their in-scope labels).
func (m *Metal) WatchNodes(ctx context.Context) error {
	for _, w := range m.Workloads {
		mc, err := metadata.NewForConfig(Fast(w.Env.Config))
		if err != nil {
			return err
		}
		if w.Nodes, err = StartWatch(ctx, mc, Nodes, "", InScope); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the watches and the control planes.
func (m *Metal) Close() {
	var wg sync.WaitGroup
	for _, w := range m.Workloads {
		if w == nil {
			continue
		}
		if w.Nodes != nil {
			w.Nodes.Stop()
		}
		wg.Go(func() { stopEnv(w.Env) })
	}
	if m.Mgmt != nil {
		wg.Go(func() { stopEnv(m.Mgmt) })
	}
	wg.Wait()
}

func stopEnv(e *testenv.Env) {
	if err := e.Stop(); err != nil {
		Logf("stopping the control plane at %s: %v", e.Config.Host, err)
	}
}

// Hosts is the number of hosts.
func (m *Metal) Hosts() int { return len(m.Workloads) * m.HostsPer }

// NodeObjectBytes is the size of one Node as created (for the report).
func (m *Metal) NodeObjectBytes() int {
	raw, err := json.Marshal(bareMetalNode(0, 0, m.NodeImages))
	if err != nil {
		return 0
	}
	return len(raw)
}

// Seed creates, in the management cluster, per workload cluster its
// kubeconfig Secret, Metal3Cluster and Cluster (provisioned) and per host a
// BareMetalHost (in-scope and other labels, consumerRef), Metal3Machine
// (naming the host, owned by the Machine) and Machine (status.nodeRef); and
// in each workload cluster the Nodes, without the in-scope labels.
func (m *Metal) Seed(ctx context.Context) error {
	start := time.Now()
	if err := m.C.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MetalNamespace}}); err != nil {
		return err
	}
	for c := range m.Workloads {
		if err := m.seedCluster(ctx, c); err != nil {
			return err
		}
	}
	m.Want = make([][]map[string]string, len(m.Workloads))
	for c := range m.Workloads {
		m.Want[c] = make([]map[string]string, m.HostsPer)
		for h := range m.HostsPer {
			m.Want[c][h] = InitialLabels(c, h)
		}
	}
	n := len(m.Workloads) * m.HostsPer
	if err := Parallel(ctx, n, seedWorkers, func(ctx context.Context, i int) error { return m.seedHost(ctx, i/m.HostsPer, i%m.HostsPer) }); err != nil {
		return err
	}
	Logf("management: %d clusters, %d hosts with Metal3Machines and Machines created in %s", len(m.Workloads), n, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := Parallel(ctx, n, seedWorkers, func(ctx context.Context, i int) error { return m.createNode(ctx, i/m.HostsPer, i%m.HostsPer) }); err != nil {
		return err
	}
	Logf("workload clusters: %d Nodes (%d bytes each) created in %s", n, m.NodeObjectBytes(), time.Since(start).Round(time.Millisecond))
	return nil
}

// seedCluster creates one workload cluster's Secret, Metal3Cluster and
// Cluster, marked provisioned (clustercache connects to it then).
func (m *Metal) seedCluster(ctx context.Context, c int) error {
	name := ClusterName(c)
	if err := m.C.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: MetalNamespace, Name: name + "-kubeconfig",
		Labels: map[string]string{clusterv1.ClusterNameLabel: name}}, Data: map[string][]byte{"value": m.Workloads[c].Env.KubeConfig}}); err != nil {
		return err
	}
	m3c := &unstructured.Unstructured{}
	m3c.SetGroupVersionKind(metal3.Metal3ClusterGVK)
	m3c.SetNamespace(MetalNamespace)
	m3c.SetName(name)
	if err := m.C.Create(ctx, m3c); err != nil {
		return err
	}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: MetalNamespace, Name: name}, Spec: clusterv1.ClusterSpec{
		InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: metal3.Metal3ClusterGVK.Group, Kind: "Metal3Cluster", Name: name},
	}}
	if err := m.C.Create(ctx, cl); err != nil {
		return err
	}
	cl.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	return m.C.Status().Update(ctx, cl)
}

// seedHost creates one host's Machine (with its nodeRef), Metal3Machine
// and BareMetalHost.
func (m *Metal) seedHost(ctx context.Context, c, h int) error {
	name := MachineName(c, h)
	mach := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: MetalNamespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: ClusterName(c)}},
		Spec: clusterv1.MachineSpec{ClusterName: ClusterName(c),
			Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To(name + "-bootstrap")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: metal3.Metal3MachineGVK.Group, Kind: "Metal3Machine", Name: name},
		}}
	if err := m.C.Create(ctx, mach); err != nil {
		return fmt.Errorf("creating Machine %s: %w", name, err)
	}
	mach.Status.NodeRef = clusterv1.MachineNodeReference{Name: NodeName(h)}
	if err := m.C.Status().Update(ctx, mach); err != nil {
		return fmt.Errorf("setting the nodeRef of Machine %s: %w", name, err)
	}
	m3m := &unstructured.Unstructured{}
	m3m.SetGroupVersionKind(metal3.Metal3MachineGVK)
	m3m.SetNamespace(MetalNamespace)
	m3m.SetName(name)
	m3m.SetAnnotations(map[string]string{metal3.HostAnnotation: MetalNamespace + "/" + HostName(c, h)})
	m3m.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: mach.Name, UID: mach.UID, Controller: ptr.To(true)}})
	if err := m.C.Create(ctx, m3m); err != nil {
		return fmt.Errorf("creating Metal3Machine %s: %w", name, err)
	}
	labels := maps.Clone(m.Want[c][h])
	labels[MetalSelectorLabel] = MetalProfileName
	labels["owner.example.com/team"] = "metal" // out of scope: stays on the host
	host := &metal3.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: MetalNamespace, Name: HostName(c, h), Labels: labels},
		Spec: metal3.BareMetalHostSpec{ConsumerRef: &corev1.ObjectReference{
			APIVersion: metal3.Metal3MachineGVK.GroupVersion().String(), Kind: "Metal3Machine", Namespace: MetalNamespace, Name: name}}}
	if err := m.C.Create(ctx, host); err != nil {
		return fmt.Errorf("creating BareMetalHost %s: %w", host.Name, err)
	}
	return nil
}

// createNode registers a host's Node in its workload cluster.
func (m *Metal) createNode(ctx context.Context, c, h int) error {
	_, err := m.Workloads[c].Kube.CoreV1().Nodes().Create(ctx, bareMetalNode(c, h, m.NodeImages), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s in %s: %w", NodeName(h), ClusterName(c), err)
	}
	return nil
}

// bareMetalNode is a Node as a kubelet on a bare-metal server registers
// it: the usual labels, a Metal3 provider ID, capacity, conditions, node
// info and images cached (the bulk of a real Node's size on the wire). It
// has none of the in-scope labels: the initial sync brings them.
func bareMetalNode(c, h, images int) *corev1.Node {
	name := NodeName(h)
	q := resource.MustParse
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
			"node-role.kubernetes.io/worker": "", "node.kubernetes.io/instance-type": "baremetal",
			"topology.kubernetes.io/region": "dc1", "topology.kubernetes.io/zone": fmt.Sprintf("dc1-%s", ClusterName(c)),
		}, Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("metal3://%s/%s/%s", MetalNamespace, HostName(c, h), MachineName(c, h)),
			PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 100+c, h%256)},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: q("64"), corev1.ResourceMemory: q("527988856Ki"), corev1.ResourcePods: q("250")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("63500m"), corev1.ResourceMemory: q("525000000Ki"), corev1.ResourcePods: q("250")},
			Conditions:  []corev1.NodeCondition{ready},
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.0.%d", c, h%250+1)}, {Type: corev1.NodeHostName, Address: name}},
			NodeInfo: corev1.NodeSystemInfo{MachineID: fmt.Sprintf("%032x", c*1000+h+1), KernelVersion: "6.8.0-60-generic",
				OSImage: "Ubuntu 24.04.2 LTS", ContainerRuntimeVersion: "containerd://2.0.5", KubeletVersion: "v1.37.0",
				OperatingSystem: "linux", Architecture: "amd64"},
			Images: cachedImages(images),
		},
	}
	return n
}

// cachedImages lists n images as a kubelet reports them.
func cachedImages(n int) []corev1.ContainerImage {
	out := make([]corev1.ContainerImage, n)
	for i := range out {
		repo := fmt.Sprintf("registry.example.com/platform/component-%02d", i)
		out[i] = corev1.ContainerImage{Names: []string{fmt.Sprintf("%s@sha256:%064x", repo, uint64(i+1)*0x9e3779b97f4a7c15), repo + ":v1." + fmt.Sprint(i)},
			SizeBytes: int64(30_000_000 + i*1_000_000)}
	}
	return out
}

// Profile is the one LabelSyncProfile: every host (by the selector label),
// both prefixes, resync every resync.
func Profile(resync time.Duration) *v1alpha1.LabelSyncProfile {
	return &v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Namespace: MetalNamespace, Name: MetalProfileName},
		Spec: v1alpha1.LabelSyncProfileSpec{
			HostSelector:   metav1.LabelSelector{MatchLabels: map[string]string{MetalSelectorLabel: MetalProfileName}},
			Prefixes:       []string{RackPrefix, SecurityPrefix},
			ResyncInterval: &metav1.Duration{Duration: resync},
		}}
}

// AwaitAllNodes waits until every Node's in-scope labels are its host's
// and returns the time of the last event that made one so.
func (m *Metal) AwaitAllNodes(ctx context.Context, timeout time.Duration) (time.Time, error) {
	var last time.Time
	deadline := time.Now().Add(timeout)
	for c, w := range m.Workloads {
		for h := range m.HostsPer {
			want := m.Want[c][h]
			at, err := w.Nodes.Await(ctx, NodeKey(h), func(s ObjState) bool { return maps.Equal(s.Labels, want) }, time.Until(deadline))
			if err != nil {
				return last, fmt.Errorf("%s: %w", ClusterName(c), err)
			}
			last = later(last, at)
		}
	}
	return last, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// WaitReady waits until the profile is Ready for its generation with
// every host matched and in sync; running reports the controller's exit,
// logFile is its log (quoted on failure).
func (m *Metal) WaitReady(ctx context.Context, running func() error, logFile string, timeout time.Duration) error {
	n := int32(m.Hosts())
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := running(); err != nil {
			return false, err
		}
		p, err := m.Profile(ctx)
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		last = fmt.Sprintf("matched %d, inSync %d, waiting %d, Ready %+v", p.Status.HostsMatched, p.Status.NodesInSync, p.Status.HostsWaiting, c)
		return c != nil && c.Status == metav1.ConditionTrue && p.Status.ObservedGeneration == p.Generation &&
			p.Status.HostsMatched == n && p.Status.NodesInSync == n, nil
	})
	if err != nil {
		return fmt.Errorf("profile %s: %w (last: %s); controller log:\n%s", MetalProfileName, err, last, Tail(logFile, 20))
	}
	return nil
}

// Profile reads the LabelSyncProfile.
func (m *Metal) Profile(ctx context.Context) (*v1alpha1.LabelSyncProfile, error) {
	p := &v1alpha1.LabelSyncProfile{}
	return p, m.C.Get(ctx, types.NamespacedName{Namespace: MetalNamespace, Name: MetalProfileName}, p)
}

// Pick spreads the i-th of n changes over the clusters and hosts; offset
// keeps scenarios on different hosts.
func (m *Metal) Pick(i, offset int) (c, h int) {
	c = i % len(m.Workloads)
	h = (i/len(m.Workloads)*7 + offset) % m.HostsPer
	return c, h
}

// labelEdit is one change of a label: set (value) or removal (nil).
type labelEdit struct {
	op    string
	key   string
	value *string
}

// editFor is the i-th edit: a changed value, a new key, a removed key in
// turn.
func editFor(i int, tag string) labelEdit {
	v := fmt.Sprintf("%s%d", tag, i)
	switch i % 3 {
	case 0:
		return labelEdit{op: "change", key: RackPrefix + "/row", value: &v}
	case 1:
		return labelEdit{op: "add", key: RackPrefix + "/slot", value: &v}
	default:
		return labelEdit{op: "remove", key: SecurityPrefix + "/level"}
	}
}

// apply is labels with the edit made.
func (e labelEdit) apply(labels map[string]string) map[string]string {
	out := maps.Clone(labels)
	if e.value == nil {
		delete(out, e.key)
	} else {
		out[e.key] = *e.value
	}
	return out
}

// patchBody is the JSON merge patch of the edit.
func (e labelEdit) patchBody() []byte {
	v := "null"
	if e.value != nil {
		v = fmt.Sprintf("%q", *e.value)
	}
	return fmt.Appendf(nil, `{"metadata":{"labels":{%q:%s}}}`, e.key, v)
}

// ChangeHost makes the i-th host label change (on host Pick(i, 0): a
// changed value, an added key; in turn with removing the key the add
// before put on its host) and returns its
// operation and the time from just before the request until the harness's
// watch of the workload cluster saw the Node carry the host's in-scope
// labels (at most wait).
func (m *Metal) ChangeHost(ctx context.Context, i int, wait time.Duration) (string, time.Duration, error) {
	c, h := m.Pick(i, 0)
	e := editFor(i, "c")
	switch e.op {
	case "add":
		e.key = slotKey(i)
	case "remove":
		// The key the add before put on its host: one removal per key,
		// as a person's edits are. One key removed from many Nodes within
		// the hour is a mass removal label sync holds for approval
		// (docs/labelsync.md), which is not what this measures.
		c, h = m.Pick(i-1, 0)
		e.key = slotKey(i - 1)
	}
	want := e.apply(m.Want[c][h])
	host := &metav1.PartialObjectMetadata{}
	host.SetGroupVersionKind(metal3.HostGVK)
	host.SetNamespace(MetalNamespace)
	host.SetName(HostName(c, h))
	start := time.Now()
	if err := m.C.Patch(ctx, host, client.RawPatch(types.MergePatchType, e.patchBody())); err != nil {
		return "", 0, err
	}
	m.Want[c][h] = want
	at, err := m.Workloads[c].Nodes.Await(ctx, NodeKey(h), func(s ObjState) bool { return maps.Equal(s.Labels, want) }, wait)
	if err != nil {
		return "", 0, fmt.Errorf("change %d (%s %s on %s): %w", i, e.op, e.key, HostName(c, h), err)
	}
	return e.op, at.Sub(start), nil
}

// slotKey is the label key the i-th host label change adds.
func slotKey(i int) string { return fmt.Sprintf("%s/slot-%d", RackPrefix, i) }

// EditNode makes the i-th Node-side edit of an in-scope label (on host
// Pick(i, 3): a changed value, an added key, a removed key in turn) and
// returns its operation and the time from just before the request until
// the harness's watch saw a newer version of the Node with the host's
// labels back (at most wait).
func (m *Metal) EditNode(ctx context.Context, i int, wait time.Duration) (string, time.Duration, error) {
	c, h := m.Pick(i, 3)
	e := editFor(i, "edited")
	if e.op == "remove" {
		e.key = RackPrefix + "/zone"
	}
	want := m.Want[c][h]
	start := time.Now()
	n, err := m.Workloads[c].Kube.CoreV1().Nodes().Patch(ctx, NodeName(h), types.MergePatchType, e.patchBody(), metav1.PatchOptions{})
	if err != nil {
		return "", 0, err
	}
	var edited uint64
	if _, err := fmt.Sscan(n.ResourceVersion, &edited); err != nil {
		return "", 0, fmt.Errorf("resourceVersion %q of node %s: %w", n.ResourceVersion, n.Name, err)
	}
	at, err := m.Workloads[c].Nodes.Await(ctx, NodeKey(h), func(s ObjState) bool {
		return s.RV > edited && maps.Equal(s.Labels, want)
	}, wait)
	if err != nil {
		return "", 0, fmt.Errorf("revert %d (%s %s on node %s of %s): %w", i, e.op, e.key, NodeName(h), ClusterName(c), err)
	}
	return e.op, at.Sub(start), nil
}
