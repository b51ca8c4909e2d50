package main

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

const (
	// namespace holds the management objects.
	namespace = "metal"
	// rackPrefix and securityPrefix are the profile's prefixes.
	rackPrefix     = "rack.example.com"
	securityPrefix = "security.example.com"
	// profileName names the one LabelSyncProfile; hosts carry
	// selectorLabel=profileName.
	profileName   = "racks"
	selectorLabel = "labelsync"
	// seedWorkers is how many objects the harness creates at once.
	seedWorkers = 16
)

func clusterName(c int) string    { return fmt.Sprintf("wc-%02d", c) }
func hostName(c, h int) string    { return fmt.Sprintf("%s-host-%03d", clusterName(c), h) }
func machineName(c, h int) string { return fmt.Sprintf("%s-worker-%03d", clusterName(c), h) }
func nodeName(h int) string       { return fmt.Sprintf("worker-%03d", h) } // Node names repeat across clusters, as they do
func initialLabels(c, h int) map[string]string {
	return map[string]string{
		rackPrefix + "/row":       fmt.Sprintf("r%02d", h/10),
		rackPrefix + "/zone":      fmt.Sprintf("z%d", (c+h)%3),
		securityPrefix + "/level": fmt.Sprintf("l%d", h%2),
	}
}

// seed creates, in the management cluster, per workload cluster its
// kubeconfig Secret, Metal3Cluster and Cluster (provisioned) and per host a
// BareMetalHost (in-scope and other labels, consumerRef), Metal3Machine
// (naming the host, owned by the Machine) and Machine (status.nodeRef); and
// in each workload cluster the Nodes, without the in-scope labels.
func (b *bench) seed(ctx context.Context) error {
	start := time.Now()
	if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}
	for c := range b.workloads {
		if err := b.seedCluster(ctx, c); err != nil {
			return err
		}
	}
	b.want = make([][]map[string]string, len(b.workloads))
	for c := range b.workloads {
		b.want[c] = make([]map[string]string, b.o.hostsPer)
		for h := range b.o.hostsPer {
			b.want[c][h] = initialLabels(c, h)
		}
	}
	n := len(b.workloads) * b.o.hostsPer
	if err := benchkit.Parallel(ctx, n, seedWorkers, func(ctx context.Context, i int) error { return b.seedHost(ctx, i/b.o.hostsPer, i%b.o.hostsPer) }); err != nil {
		return err
	}
	benchkit.Logf("management: %d clusters, %d hosts with Metal3Machines and Machines created in %s", len(b.workloads), n, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := benchkit.Parallel(ctx, n, seedWorkers, func(ctx context.Context, i int) error { return b.createNode(ctx, i/b.o.hostsPer, i%b.o.hostsPer) }); err != nil {
		return err
	}
	benchkit.Logf("workload clusters: %d Nodes (%d bytes each) created in %s", n, b.nodeObjectBytes(), time.Since(start).Round(time.Millisecond))
	return nil
}

// seedCluster creates one workload cluster's Secret, Metal3Cluster and
// Cluster, marked provisioned (clustercache connects to it then).
func (b *bench) seedCluster(ctx context.Context, c int) error {
	name := clusterName(c)
	if err := b.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-kubeconfig",
		Labels: map[string]string{clusterv1.ClusterNameLabel: name}}, Data: map[string][]byte{"value": b.workloads[c].env.KubeConfig}}); err != nil {
		return err
	}
	m3c := &unstructured.Unstructured{}
	m3c.SetGroupVersionKind(metal3.Metal3ClusterGVK)
	m3c.SetNamespace(namespace)
	m3c.SetName(name)
	if err := b.c.Create(ctx, m3c); err != nil {
		return err
	}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: clusterv1.ClusterSpec{
		InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: metal3.Metal3ClusterGVK.Group, Kind: "Metal3Cluster", Name: name},
	}}
	if err := b.c.Create(ctx, cl); err != nil {
		return err
	}
	cl.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	return b.c.Status().Update(ctx, cl)
}

// seedHost creates one host's Machine (with its nodeRef), Metal3Machine
// and BareMetalHost.
func (b *bench) seedHost(ctx context.Context, c, h int) error {
	name := machineName(c, h)
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: clusterName(c)}},
		Spec: clusterv1.MachineSpec{ClusterName: clusterName(c),
			Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To(name + "-bootstrap")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: metal3.Metal3MachineGVK.Group, Kind: "Metal3Machine", Name: name},
		}}
	if err := b.c.Create(ctx, m); err != nil {
		return fmt.Errorf("creating Machine %s: %w", name, err)
	}
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: nodeName(h)}
	if err := b.c.Status().Update(ctx, m); err != nil {
		return fmt.Errorf("setting the nodeRef of Machine %s: %w", name, err)
	}
	m3m := &unstructured.Unstructured{}
	m3m.SetGroupVersionKind(metal3.Metal3MachineGVK)
	m3m.SetNamespace(namespace)
	m3m.SetName(name)
	m3m.SetAnnotations(map[string]string{metal3.HostAnnotation: namespace + "/" + hostName(c, h)})
	m3m.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID, Controller: ptr.To(true)}})
	if err := b.c.Create(ctx, m3m); err != nil {
		return fmt.Errorf("creating Metal3Machine %s: %w", name, err)
	}
	labels := maps.Clone(b.want[c][h])
	labels[selectorLabel] = profileName
	labels["owner.example.com/team"] = "metal" // out of scope: stays on the host
	host := &metal3.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: hostName(c, h), Labels: labels},
		Spec: metal3.BareMetalHostSpec{ConsumerRef: &corev1.ObjectReference{
			APIVersion: metal3.Metal3MachineGVK.GroupVersion().String(), Kind: "Metal3Machine", Namespace: namespace, Name: name}}}
	if err := b.c.Create(ctx, host); err != nil {
		return fmt.Errorf("creating BareMetalHost %s: %w", host.Name, err)
	}
	return nil
}

// createNode registers a host's Node in its workload cluster.
func (b *bench) createNode(ctx context.Context, c, h int) error {
	_, err := b.workloads[c].kube.CoreV1().Nodes().Create(ctx, bareMetalNode(c, h, b.o.nodeImages), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s in %s: %w", nodeName(h), clusterName(c), err)
	}
	return nil
}

// bareMetalNode is a Node as a kubelet on a bare-metal server registers
// it: the usual labels, a Metal3 provider ID, capacity, conditions, node
// info and images cached (the bulk of a real Node's size on the wire). It
// has none of the in-scope labels: the initial sync brings them.
func bareMetalNode(c, h, images int) *corev1.Node {
	name := nodeName(h)
	q := resource.MustParse
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
			"node-role.kubernetes.io/worker": "", "node.kubernetes.io/instance-type": "baremetal",
			"topology.kubernetes.io/region": "dc1", "topology.kubernetes.io/zone": fmt.Sprintf("dc1-%s", clusterName(c)),
		}, Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("metal3://%s/%s/%s", namespace, hostName(c, h), machineName(c, h)),
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
