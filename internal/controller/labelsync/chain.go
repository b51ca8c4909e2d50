package labelsync

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
)

// link is where a host's Node is: the chain BareMetalHost → consumerRef
// (Metal3Machine) → owner Machine → Machine.status.nodeRef, in the Machine's
// Cluster. A host whose chain is not complete waits (wait says for what).
// Only links within the host's namespace are followed, and only to a
// Metal3Machine that names the host back; any other link is refused.
type link struct {
	host *metal3.BareMetalHost
	// wait is why the host has no Node to sync yet; "" when linked.
	wait v1alpha1.WaitReason
	// refused says which link of the chain is not followed and why; ""
	// when none is. Nothing is written for a refused host.
	refused string
	// paused: the host, its Cluster or Machine is paused.
	paused bool
	// machine is the Machine (namespace/name) when found.
	machine types.NamespacedName
	// cluster is the CAPI Cluster when found.
	cluster types.NamespacedName
	// infra is the Cluster's Metal3Cluster, when its infrastructureRef is one.
	infra types.NamespacedName
	// node is the Node's name in the cluster.
	node string
}

// hostKey names the host in messages and indexes.
func (l *link) hostKey() types.NamespacedName {
	return types.NamespacedName{Namespace: l.host.Namespace, Name: l.host.Name}
}

// resolve follows a host's chain through the management cluster's cache,
// reading with rd. Missing links are waits, not errors; only a failing
// read is an error. As in Cluster API, every link stays in the host's
// namespace (the Machine, Cluster and kubeconfig Secret are found there by
// construction; the consumerRef is checked), and the Metal3Machine must
// name the host back in its metal3.io/BareMetalHost annotation: a host
// cannot steer the Node of a Metal3Machine that is not its own.
func resolve(ctx context.Context, rd chainReader, h *metal3.BareMetalHost) (*link, error) {
	l := &link{host: h, paused: h.Paused()}
	ref := h.Spec.ConsumerRef
	if ref == nil || ref.Kind != metal3.Metal3MachineGVK.Kind || !isInfraGroup(ref.APIVersion) {
		l.wait = v1alpha1.WaitNoConsumer
		return l, nil
	}
	ns := h.Namespace
	if ref.Namespace != "" && ref.Namespace != ns {
		l.refused = fmt.Sprintf("spec.consumerRef names Metal3Machine %s/%s in another namespace: only links within namespace %s are followed",
			ref.Namespace, ref.Name, ns)
		return l, nil
	}
	m3m, err := rd.metal3Machine(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name})
	if err != nil {
		return nil, fmt.Errorf("reading Metal3Machine %s/%s of host %s/%s: %w", ns, ref.Name, h.Namespace, h.Name, err)
	}
	if m3m == nil {
		l.wait = v1alpha1.WaitNoMachine
		return l, nil
	}
	if named, ok := hostOfMachine(m3m.Annotations); !ok {
		// CAPM3 annotates the Metal3Machine right after it sets the host's
		// consumerRef: not associated yet.
		l.wait = v1alpha1.WaitNoMachine
		return l, nil
	} else if named != l.hostKey() {
		l.refused = fmt.Sprintf("spec.consumerRef names Metal3Machine %s/%s, whose annotation %s names host %s, not this one: the link is not followed",
			ns, ref.Name, metal3.HostAnnotation, named)
		return l, nil
	}
	if _, ok := m3m.Annotations[clusterv1.PausedAnnotation]; ok {
		l.paused = true
	}
	machineName := ownerMachine(m3m.OwnerReferences)
	if machineName == "" {
		l.wait = v1alpha1.WaitNoMachine
		return l, nil
	}
	l.machine = types.NamespacedName{Namespace: ns, Name: machineName}
	m, err := rd.machine(ctx, l.machine)
	if err != nil {
		return nil, fmt.Errorf("reading Machine %s of host %s/%s: %w", l.machine, h.Namespace, h.Name, err)
	}
	if m == nil {
		l.wait = v1alpha1.WaitNoMachine
		return l, nil
	}
	return l, followMachine(ctx, rd, l, m)
}

// followMachine completes a link from its Machine: pause, Cluster, Node.
func followMachine(ctx context.Context, rd chainReader, l *link, m *clusterv1.Machine) error {
	if _, ok := m.Annotations[clusterv1.PausedAnnotation]; ok {
		l.paused = true
	}
	if m.Spec.ClusterName != "" {
		l.cluster = types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.ClusterName}
		if err := readCluster(ctx, rd, l); err != nil {
			return err
		}
	}
	if m.Status.NodeRef.Name == "" {
		l.wait = v1alpha1.WaitNoNodeRef
		return nil
	}
	l.node = m.Status.NodeRef.Name
	if l.cluster.Name == "" {
		l.wait = v1alpha1.WaitClusterUnreachable
	}
	return nil
}

// readCluster reads the link's Cluster: whether it is paused and its
// Metal3Cluster. A missing Cluster leaves both unset (the cluster is then
// unreachable, which the pass reports).
func readCluster(ctx context.Context, rd chainReader, l *link) error {
	c, err := rd.cluster(ctx, l.cluster)
	if err != nil {
		return fmt.Errorf("reading Cluster %s of host %s/%s: %w", l.cluster, l.host.Namespace, l.host.Name, err)
	}
	if c == nil {
		return nil
	}
	if clusterPaused(c) {
		l.paused = true
	}
	if ref := c.Spec.InfrastructureRef; ref.Kind == metal3.Metal3ClusterGVK.Kind && ref.APIGroup == metal3.Metal3ClusterGVK.Group {
		l.infra = types.NamespacedName{Namespace: c.Namespace, Name: ref.Name}
		return readInfra(ctx, rd, l)
	}
	return nil
}

// readInfra reads whether the link's Metal3Cluster is paused with the
// cluster.x-k8s.io/paused annotation, which CAPM3 honours too.
func readInfra(ctx context.Context, rd chainReader, l *link) error {
	m3c, err := rd.metal3Cluster(ctx, l.infra)
	if err != nil {
		return fmt.Errorf("reading Metal3Cluster %s of host %s/%s: %w", l.infra, l.host.Namespace, l.host.Name, err)
	}
	if m3c != nil {
		if _, ok := m3c.Annotations[clusterv1.PausedAnnotation]; ok {
			l.paused = true
		}
	}
	return nil
}

// clusterPaused reports a Cluster paused by spec.paused or the
// cluster.x-k8s.io/paused annotation.
func clusterPaused(c *clusterv1.Cluster) bool {
	_, annotated := c.Annotations[clusterv1.PausedAnnotation]
	return annotated || (c.Spec.Paused != nil && *c.Spec.Paused)
}

// ownerMachine is the name of the CAPI Machine among owner references, or "".
func ownerMachine(refs []metav1.OwnerReference) string {
	for _, o := range refs {
		if o.Kind == "Machine" && strings.HasPrefix(o.APIVersion, clusterv1.GroupVersion.Group+"/") {
			return o.Name
		}
	}
	return ""
}

// isInfraGroup reports an apiVersion of the infrastructure.cluster.x-k8s.io
// group (any version; an empty apiVersion is taken as that group, as CAPM3
// sets it).
func isInfraGroup(apiVersion string) bool {
	return apiVersion == "" || strings.HasPrefix(apiVersion, metal3.Metal3MachineGVK.Group+"/")
}

// hostOfMachine returns the BareMetalHost a Metal3Machine names in its
// metal3.io/BareMetalHost annotation.
func hostOfMachine(annotations map[string]string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(annotations[metal3.HostAnnotation], "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// hostsOf lists the hosts of a source: a profile's selected hosts in its
// namespace, or the hosts of a Metal3Cluster's Cluster(s) through their
// Machines and Metal3Machines.
func (r *Reconciler) hostsOf(ctx context.Context, src *source) ([]*metal3.BareMetalHost, error) {
	if src.profile != nil {
		return profileHosts(ctx, r.Client, src.profile)
	}
	return r.hostsOfInfra(ctx, *src.infra)
}

// profileHosts lists the hosts a profile selects in its namespace. The
// hosts are only read: from a cache, they are not copied.
func profileHosts(ctx context.Context, c client.Reader, p *v1alpha1.LabelSyncProfile) ([]*metal3.BareMetalHost, error) {
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.HostSelector)
	if err != nil {
		return nil, err
	}
	var list metal3.BareMetalHostList
	if err := c.List(ctx, &list, client.InNamespace(p.Namespace), client.MatchingLabelsSelector{Selector: sel},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing BareMetalHosts: %w", err)
	}
	out := make([]*metal3.BareMetalHost, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// hostsOfInfra finds the hosts of a Metal3Cluster: Clusters whose
// infrastructureRef names it → their Machines → each Machine's
// Metal3Machine → the host its metal3.io/BareMetalHost annotation names.
func (r *Reconciler) hostsOfInfra(ctx context.Context, infra types.NamespacedName) ([]*metal3.BareMetalHost, error) {
	var clusters clusterv1.ClusterList
	if err := r.Client.List(ctx, &clusters, client.InNamespace(infra.Namespace)); err != nil {
		return nil, fmt.Errorf("listing Clusters: %w", err)
	}
	var out []*metal3.BareMetalHost
	seen := map[types.NamespacedName]bool{}
	for i := range clusters.Items {
		c := &clusters.Items[i]
		if ref := c.Spec.InfrastructureRef; ref.Kind != metal3.Metal3ClusterGVK.Kind || ref.APIGroup != metal3.Metal3ClusterGVK.Group || ref.Name != infra.Name {
			continue
		}
		var machines clusterv1.MachineList
		if err := r.Client.List(ctx, &machines, client.InNamespace(c.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: c.Name}); err != nil {
			return nil, fmt.Errorf("listing Machines of Cluster %s/%s: %w", c.Namespace, c.Name, err)
		}
		for j := range machines.Items {
			h, err := r.hostOfMachineObject(ctx, &machines.Items[j])
			if err != nil {
				return nil, err
			}
			if h != nil && !seen[types.NamespacedName{Namespace: h.Namespace, Name: h.Name}] {
				seen[types.NamespacedName{Namespace: h.Namespace, Name: h.Name}] = true
				out = append(out, h)
			}
		}
	}
	return out, nil
}

// hostOfMachineObject returns the host behind a Machine, or nil when its
// Metal3Machine or host is missing or the host does not name it back.
func (r *Reconciler) hostOfMachineObject(ctx context.Context, m *clusterv1.Machine) (*metal3.BareMetalHost, error) {
	ref := m.Spec.InfrastructureRef
	if ref.Kind != metal3.Metal3MachineGVK.Kind || ref.APIGroup != metal3.Metal3MachineGVK.Group {
		return nil, nil
	}
	m3m := metadataOf(metal3.Metal3MachineGVK)
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: ref.Name}, m3m); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	key, ok := hostOfMachine(m3m.Annotations)
	if !ok || key.Namespace != m.Namespace {
		return nil, nil
	}
	var h metal3.BareMetalHost
	if err := r.Client.Get(ctx, key, &h); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return &h, nil
}
