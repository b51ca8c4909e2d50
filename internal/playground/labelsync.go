package playground

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/scheme"
)

// The labelsync act: the playground's API server is also the workload
// cluster of a self-hosted Cluster API cluster, reached through its
// <cluster>-kubeconfig Secret as a pivoted management cluster is, and the
// on-prem Node runs on a Metal3 BareMetalHost.
const (
	metalNS      = "metal"
	metalCluster = "self"
	metalMachine = "self-workers-0"
	rackProfile  = "racks"
	rackPrefix   = "rack.example.com"
	rackLabel    = rackPrefix + "/rack"
	rackValue    = "r7"
	rackEdit     = "r9"
)

// prepareLabelSync installs the act's CRDs, builds its client and creates
// Cluster "self". It runs before the controller is built: label sync looks
// for the Metal3 and Cluster API kinds once, when it starts (and its
// connection to the Cluster is then made while the first acts play). When
// it cannot, it says why on the timeline and keeps the reason; the act's
// steps then fail at once with it, after the other acts ran.
func (pg *playground) prepareLabelSync(ctx context.Context) {
	mod, err := pg.installLabelSyncCRDs(ctx)
	if err == nil {
		err = createSelfCluster(ctx, pg.metal, pg.cp.KubeConfig)
	}
	if err != nil {
		pg.metal, pg.metalErr = nil, fmt.Errorf("the labelsync act cannot run: %w", err)
		if ctx.Err() == nil {
			pg.tl.note("%v", pg.metalErr)
		}
		return
	}
	pg.tl.note("installed Cluster API's Cluster and Machine CRDs (%s %s, from the Go module cache) and the minimal Metal3 CRDs (%s)",
		mod.Path, mod.Version, metal3CRDDir)
	pg.tl.note("created Cluster %s/%s (infrastructure: a Metal3Cluster) and its %s-kubeconfig Secret, which reaches this API server: the management cluster is its own workload cluster",
		metalNS, metalCluster, metalCluster)
}

// installLabelSyncCRDs finds and installs the act's CRDs and sets pg.metal.
func (pg *playground) installLabelSyncCRDs(ctx context.Context) (module, error) {
	paths, mod, err := labelSyncCRDs(ctx, pg.cp.repo)
	if err != nil {
		return mod, err
	}
	if err := installCRDs(pg.cp.config, paths); err != nil {
		return mod, fmt.Errorf("installing the Cluster API and Metal3 CRDs: %w", err)
	}
	s := scheme.New()
	if err := clusterv1.AddToScheme(s); err != nil {
		return mod, err
	}
	if err := metal3.AddToScheme(s); err != nil {
		return mod, err
	}
	pg.metal, err = client.New(pg.cp.config, client.Options{Scheme: s})
	return mod, err
}

// metalClient is the act's client, or why the act cannot run.
func (pg *playground) metalClient() (client.Client, error) {
	if pg.metal == nil {
		if pg.metalErr != nil {
			return nil, pg.metalErr
		}
		return nil, fmt.Errorf("the labelsync act's CRDs were not installed")
	}
	return pg.metal, nil
}

// hostLabelToNode links the on-prem Node to a BareMetalHost carrying a
// rack label (its Metal3Machine, the Machine of Cluster "self" whose nodeRef
// names the Node) and adds a LabelSyncProfile owning the rack prefix: the
// Node gets the label.
func (pg *playground) hostLabelToNode() Step {
	n := pg.layout.OnPrem
	return Step{
		Name: "labelsync: host label → its Node",
		Action: func(ctx context.Context) error {
			c, err := pg.metalClient()
			if err != nil {
				return err
			}
			if err := createHostChain(ctx, c, n.Name); err != nil {
				return err
			}
			return c.Create(ctx, &v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Namespace: metalNS, Name: rackProfile},
				Spec: v1alpha1.LabelSyncProfileSpec{Prefixes: []string{rackPrefix}}}) // an empty hostSelector: every host of the namespace
		},
		Check: func(ctx context.Context) (string, error) {
			if err := pg.nodeLabelIs(ctx, n.Name, rackLabel, rackValue); err != nil {
				return "", err
			}
			if err := pg.profileInSync(ctx); err != nil {
				return "", err
			}
			return fmt.Sprintf("BareMetalHost %s/%s labelled %s=%s, LabelSyncProfile %s owning %s → label on Node %s (host → Metal3Machine → Machine's nodeRef, in Cluster %s)",
				metalNS, n.Name, rackLabel, rackValue, rackProfile, rackPrefix, n.Name, metalCluster), nil
		},
	}
}

// nodeEditReverted edits the synced label on the Node, as kubectl label
// would: the host is the source of truth, and the edit is undone.
func (pg *playground) nodeEditReverted() Step {
	n := pg.layout.OnPrem
	return Step{
		Name: "labelsync: Node edit reverted",
		Action: func(ctx context.Context) error {
			if _, err := pg.metalClient(); err != nil {
				return err
			}
			return pg.setLabel(ctx, n, rackLabel, strp(rackEdit))
		},
		Check: func(ctx context.Context) (string, error) {
			if err := pg.nodeLabelIs(ctx, n.Name, rackLabel, rackValue); err != nil {
				return "", err
			}
			return fmt.Sprintf("kubectl label node %s %s=%s → the Node watch sees the edit, %s=%s is written back from the host",
				n.Name, rackLabel, rackEdit, rackLabel, rackValue), nil
		},
	}
}

// createSelfCluster creates the namespace, Cluster "self" (a Metal3Cluster
// infrastructure, provisioned) and its kubeconfig Secret.
func createSelfCluster(ctx context.Context, c client.Client, kubeconfig []byte) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metalNS}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: metalNS, Name: metalCluster + "-kubeconfig",
		Labels: map[string]string{clusterv1.ClusterNameLabel: metalCluster}}, Data: map[string][]byte{"value": kubeconfig}}
	infra := metal3Object(metal3.Metal3ClusterGVK, metalCluster)
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: metalNS, Name: metalCluster},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: metal3.Metal3ClusterGVK.Group, Kind: metal3.Metal3ClusterGVK.Kind, Name: metalCluster}}}
	if err := create(ctx, c, ns, secret, infra, cluster); err != nil {
		return err
	}
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	return c.Status().Update(ctx, cluster)
}

// createHostChain creates, as CAPM3 and Cluster API would have, the
// Machine of Cluster "self" whose nodeRef is node, its Metal3Machine naming
// the host, and the BareMetalHost consumed by it, with the rack label.
func createHostChain(ctx context.Context, c client.Client, node string) error {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: metalNS, Name: metalMachine,
		Labels: map[string]string{clusterv1.ClusterNameLabel: metalCluster}},
		Spec: clusterv1.MachineSpec{ClusterName: metalCluster,
			Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To(metalMachine + "-bootstrap")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: metal3.Metal3MachineGVK.Group, Kind: metal3.Metal3MachineGVK.Kind, Name: metalMachine}}}
	if err := create(ctx, c, m); err != nil {
		return err
	}
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: node}
	if err := c.Status().Update(ctx, m); err != nil {
		return fmt.Errorf("setting the nodeRef of Machine %s: %w", metalMachine, err)
	}
	m3m := metal3Object(metal3.Metal3MachineGVK, metalMachine)
	m3m.SetAnnotations(map[string]string{metal3.HostAnnotation: metalNS + "/" + node})
	m3m.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine",
		Name: m.Name, UID: m.UID, Controller: ptr.To(true)}})
	host := &metal3.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: metalNS, Name: node, Labels: map[string]string{rackLabel: rackValue}},
		Spec: metal3.BareMetalHostSpec{ConsumerRef: &corev1.ObjectReference{APIVersion: metal3.Metal3MachineGVK.GroupVersion().String(),
			Kind: metal3.Metal3MachineGVK.Kind, Namespace: metalNS, Name: metalMachine}}}
	return create(ctx, c, m3m, host)
}

// create creates objs in order, naming the one that failed.
func create(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			gvk, _ := c.GroupVersionKindFor(o)
			return fmt.Errorf("creating %s %s: %w", gvk.Kind, o.GetName(), err)
		}
	}
	return nil
}

// metal3Object is an empty Metal3 object of the act's namespace (the
// controller reads only their metadata).
func metal3Object(gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(gvk)
	o.SetNamespace(metalNS)
	o.SetName(name)
	return o
}

// nodeLabelIs checks one label of a Node, any prefix.
func (pg *playground) nodeLabelIs(ctx context.Context, name, key, value string) error {
	var n corev1.Node
	if err := pg.cp.client.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return fmt.Errorf("reading Node %s: %w", name, err)
	}
	if v, ok := n.Labels[key]; !ok || v != value {
		return fmt.Errorf("node %s has %s=%q (set: %t), want %q", name, key, v, ok, value)
	}
	return nil
}

// labelSyncProfile reads the act's profile.
func (pg *playground) labelSyncProfile(ctx context.Context) (*v1alpha1.LabelSyncProfile, error) {
	var p v1alpha1.LabelSyncProfile
	if err := pg.cp.client.Get(ctx, client.ObjectKey{Namespace: metalNS, Name: rackProfile}, &p); err != nil {
		return nil, fmt.Errorf("reading LabelSyncProfile %s/%s: %w", metalNS, rackProfile, err)
	}
	return &p, nil
}

// profileInSync checks that the profile reports its one host's Node in
// sync and is Ready.
func (pg *playground) profileInSync(ctx context.Context) error {
	p, err := pg.labelSyncProfile(ctx)
	if err != nil {
		return err
	}
	st := p.Status
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); st.HostsMatched != 1 || st.NodesInSync != 1 ||
		c == nil || c.Status != metav1.ConditionTrue {
		return fmt.Errorf("LabelSyncProfile %s/%s reports %d hosts matched, %d nodes in sync, waiting %+v, Ready %+v; want 1, 1, Ready",
			metalNS, rackProfile, st.HostsMatched, st.NodesInSync, st.Waiting, c)
	}
	return nil
}

// labelSyncStatus summarises the profile's status for the report.
func (pg *playground) labelSyncStatus(ctx context.Context) (string, error) {
	p, err := pg.labelSyncProfile(ctx)
	if err != nil {
		return "", err
	}
	ready := "Unknown"
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		ready = string(c.Status)
	}
	st := p.Status
	return fmt.Sprintf("%s matched, %s in sync, %d waiting, Ready=%s",
		plural(int(st.HostsMatched), "host"), plural(int(st.NodesInSync), "node"), st.HostsWaiting, ready), nil
}
