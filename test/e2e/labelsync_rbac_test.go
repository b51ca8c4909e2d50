package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// The objects of the label sync's RBAC proof, in the fixture's namespace:
// one workload cluster (the management cluster itself, through its
// kubeconfig Secret), one host on one Node, one profile owning lsPrefix.
const (
	lsCluster = "mgmt"
	lsHost    = "host-0"
	lsProfile = "racks"
	lsPrefix  = "rack.example.com"
	lsLabel   = lsPrefix + "/rack"
	lsValue   = "r1"
	// lsUnreachable selects one host in each of lsGone, clusters without
	// a kubeconfig Secret.
	lsUnreachable = "unreachable"
)

var lsGone = []string{"gone-a", "gone-b"}

// lsElsewhere is a namespace outside labelSync.secrets.namespaces.
const lsElsewhere = "ls-rbac-elsewhere"

// labelSyncSubject is the label sync's part of the RBAC proof, in objNS.
// The management cluster is its own workload cluster: a Cluster whose
// <cluster>-kubeconfig Secret holds the API server's admin kubeconfig, as
// Cluster API writes it for a self-hosted cluster. So the Node is written
// with those credentials, never the ServiceAccount's (which may not patch
// Nodes at all). With the chart's RBAC the host's label reaches its Node, a
// Node edit is reverted, the profile is Ready, its LabelsSynced events form
// a series, and nothing is forbidden. With the ClusterRole (roles unset), a
// Cluster outside the release namespace is also shown unreachable for want
// of its Secret, its Node untouched (secretsElsewhereForbidden).
type labelSyncSubject struct {
	*rbacFixture
	c     client.Client // the admin, with Cluster API and Metal3 types
	objNS string
	roles bool // labelSync.namespaces set: Roles, not a ClusterRole
	node  string
	edits int
}

func newLabelSyncSubject(objNS string, roles bool) func(*rbacFixture) rbacSubject {
	return func(f *rbacFixture) rbacSubject {
		return &labelSyncSubject{rbacFixture: f, c: labelSyncClient(f.t), objNS: objNS, roles: roles, node: objNS + "-node"}
	}
}

// setup creates, in objNS, the workload cluster (its kubeconfig Secret with
// the API server's admin credentials, Metal3Cluster and Cluster, marked
// provisioned), a host labelled under lsPrefix whose Metal3Machine's
// Machine runs on the Node f.node, that Node, and a profile owning lsPrefix;
// and deletes them when the test ends.
func (f *labelSyncSubject) setup(t *testing.T) {
	ns, ctx := f.objNS, f.ctx
	ensureNamespace(ctx, t, ns)
	create := createDeletedAtEnd(t, ctx, f.c)
	create(build.Node(f.node, build.Labels(map[string]string{"other.example.com/keep": "yes"})))
	mk := lsObjects{t: t, ctx: ctx, c: f.c, ns: ns, create: create}
	mk.connectedCluster(lsCluster, kube.KubeConfig)
	mk.hostOn(lsHost, lsProfile, lsCluster, f.node, map[string]string{lsLabel: lsValue, "not-owned.example.com/x": "y"})
	// Two more hosts, of a second profile, in two clusters that have no
	// kubeconfig Secret: one pass reports both unreachable, two
	// ClusterUnreachable events about one profile, the second of which is
	// a PATCH of the first (an event series).
	for _, gone := range lsGone {
		mk.workloadCluster(gone)
		mk.hostOn(gone+"-host", lsUnreachable, gone, gone+"-node", map[string]string{lsLabel: lsValue})
	}
	mk.profile(lsProfile)
	mk.profile(lsUnreachable)
}

// secretsElsewhereForbidden: with the chart's default Secrets values, a
// Cluster in a namespace outside the release namespace, whose kubeconfig
// Secret is there and valid, is reported unreachable because its Secret
// cannot be read (forbidden), and its host's Node is not written.
func (f *labelSyncSubject) secretsElsewhereForbidden(t *testing.T) {
	const cluster, profile = "far", "far"
	node := lsElsewhere + "-node"
	ensureNamespace(f.ctx, t, lsElsewhere)
	create := createDeletedAtEnd(t, f.ctx, f.c)
	create(build.Node(node))
	mk := lsObjects{t: t, ctx: f.ctx, c: f.c, ns: lsElsewhere, create: create}
	mk.connectedCluster(cluster, kube.KubeConfig)
	mk.hostOn(cluster+"-host", profile, cluster, node, map[string]string{lsLabel: lsValue})
	mk.profile(profile)

	p := startTagsync(t, "tagsync labelsync (Secret elsewhere)", f.args...)
	defer p.stop(t)
	eventually(t, "LabelSyncProfile "+lsElsewhere+"/"+profile+" to report its cluster unreachable, the Secret forbidden", func() string {
		var prof v1alpha1.LabelSyncProfile
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: lsElsewhere, Name: profile}, &prof); err != nil {
			return err.Error()
		}
		for _, pr := range prof.Status.Problems {
			if pr.Reason == labelsync.ReasonClusterUnreachable && strings.Contains(pr.Message, string(labelsync.CauseSecretUnreadable)) &&
				strings.Contains(pr.Message, "forbidden") {
				return ""
			}
		}
		return fmt.Sprintf("problems %+v", prof.Status.Problems)
	})
	if got := nodeLabels(f.ctx, t, node); got[lsLabel] != "" {
		t.Errorf("the Node of a cluster whose Secret is forbidden was written: %v", got)
	}
}

// fullSync: the host's label reaches its Node (labels outside the
// profile's prefix untouched), the profile is Ready, a Node edit is
// reverted through the Node watch (with the kubeconfig Secret's
// credentials), and the events are recorded.
func (f *labelSyncSubject) fullSync(t *testing.T, _ *tagsyncProc) {
	f.waitNodeLabel(t, lsValue)
	if got := nodeLabels(f.ctx, t, f.node); got["other.example.com/keep"] != "yes" || got["not-owned.example.com/x"] != "" {
		t.Errorf("labels outside the profile's prefix were touched: %v", got)
	}
	eventually(t, "LabelSyncProfile "+lsProfile+" Ready with its host in sync", func() string {
		var prof v1alpha1.LabelSyncProfile
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.objNS, Name: lsProfile}, &prof); err != nil {
			return err.Error()
		}
		if !meta.IsStatusConditionTrue(prof.Status.Conditions, v1alpha1.ConditionReady) || prof.Status.ObservedGeneration != prof.Generation {
			return fmt.Sprintf("status %+v", prof.Status)
		}
		return ""
	})
	f.editNode(t)
	f.waitNodeLabel(t, lsValue)
	waitEvents(f.ctx, t, f.objNS, labelsync.ControllerName,
		wantEvent{regarding: lsProfile, reason: labelsync.ReasonLabelsSynced},
		wantEvent{regarding: lsUnreachable, reason: labelsync.ReasonClusterUnreachable, series: true})
}

// checks: with the ClusterRole, a kubeconfig Secret outside the release
// namespace cannot be read.
func (f *labelSyncSubject) checks() []rbacCheck {
	if f.roles {
		return nil
	}
	return []rbacCheck{{"a kubeconfig Secret in another namespace is forbidden", f.secretsElsewhereForbidden}}
}

// trigger says what a run without the verb must do to need it. Most verbs
// need nothing: a fresh process lists and watches the six kinds, connects
// to the workload cluster (the Secret's GET), and its first pass over the
// unreachable profile records two ClusterUnreachable events about it (a
// create, then a PATCH into a series).
func (f *labelSyncSubject) trigger(a *ablation) {
	if a.resource == "labelsyncprofiles/status" {
		a.prepare = clearStatus(f.ctx, f.c, &v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Namespace: f.objNS, Name: lsProfile}})
	}
}

// editNode changes the in-scope label on the Node, as an admin would.
func (f *labelSyncSubject) editNode(t testing.TB) {
	t.Helper()
	f.edits++
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"edit-%d"}}}`, lsLabel, f.edits)
	must(t, mergePatch(f.ctx, kube.Client, nodeRef(f.node), patch))
}

// waitNodeLabel waits until the Node's in-scope label has value.
func (f *labelSyncSubject) waitNodeLabel(t testing.TB, value string) {
	t.Helper()
	eventually(t, fmt.Sprintf("label %s=%s on node %s", lsLabel, value, f.node), func() string {
		if got := nodeLabels(f.ctx, t, f.node)[lsLabel]; got != value {
			return fmt.Sprintf("label is %q", got)
		}
		return ""
	})
}

// lsObjects creates label sync's management objects in ns with c, handing
// each to create (which records it for deletion).
type lsObjects struct {
	t      *testing.T
	ctx    context.Context
	c      client.Client
	ns     string
	create func(client.Object)
}

// profile creates a profile owning lsPrefix for the hosts labelled
// sync=name.
func (o lsObjects) profile(name string) {
	o.t.Helper()
	o.create(build.LabelSyncProfile(name, build.Namespace(o.ns), build.HostSelector(map[string]string{"sync": name}), build.Prefixes(lsPrefix)))
}

// connectedCluster creates a workload cluster and its kubeconfig Secret
// holding kubeconfig.
func (o lsObjects) connectedCluster(name string, kubeconfig []byte) {
	o.t.Helper()
	o.create(build.KubeconfigSecret(name, kubeconfig, build.Namespace(o.ns)))
	o.workloadCluster(name)
}

// workloadCluster creates a Metal3Cluster and its Cluster, marked
// provisioned.
func (o lsObjects) workloadCluster(name string) {
	o.t.Helper()
	o.create(build.Metal3Cluster(name, build.Namespace(o.ns)))
	cluster := build.Cluster(name, build.Namespace(o.ns), build.InfrastructureRef(metal3.Metal3ClusterGVK, name))
	o.create(cluster)
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	must(o.t, o.c.Status().Update(o.ctx, cluster))
}

// hostOn makes a host of profile run on node in cluster: the host, its
// Metal3Machine owned by a Machine of cluster whose nodeRef is node, and
// the host's consumerRef to the Metal3Machine.
func (o lsObjects) hostOn(name, profile, cluster, node string, labels map[string]string) {
	o.t.Helper()
	ns := o.ns
	host := build.Object(&metal3.BareMetalHost{}, name, build.Namespace(ns), build.Labels(labels), build.Label("sync", profile))
	o.create(host)
	machine := build.Machine(name+"-m", cluster, build.Namespace(ns), build.InfrastructureRef(metal3.Metal3MachineGVK, name+"-m"))
	o.create(machine)
	machine.Status.NodeRef = clusterv1.MachineNodeReference{Name: node}
	must(o.t, o.c.Status().Update(o.ctx, machine))
	o.create(build.Metal3Machine(machine.Name, build.Namespace(ns), build.HostOf(ns, name), build.MachineOwner(machine)))
	host.Spec.ConsumerRef = build.ConsumerRef(ns, machine.Name)
	must(o.t, o.c.Update(o.ctx, host))
}

// createDeletedAtEnd returns a function that creates an object with c and
// deletes it when the test ends (the last created first).
func createDeletedAtEnd(t *testing.T, ctx context.Context, c client.Client) func(client.Object) {
	var objs []client.Object
	t.Cleanup(func() {
		for _, o := range slices.Backward(objs) {
			if err := c.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T %s: %v", o, o.GetName(), err)
			}
		}
	})
	return func(o client.Object) {
		t.Helper()
		must(t, c.Create(ctx, o))
		objs = append(objs, o)
	}
}
