package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/testenv"
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

// lsReleaseNS is the namespace the RBAC proof installs the chart in.
const lsReleaseNS = "tagsync-system"

// lsElsewhere is a namespace outside labelSync.secrets.namespaces.
const lsElsewhere = "ls-rbac-elsewhere"

// labelsyncRBACFixture is the cluster and chart the label sync's RBAC proof
// works on. It reuses rbacFixture's ablation machinery (ablate,
// waitAllowed) with the label sync's triggers.
type labelsyncRBACFixture struct {
	*rbacFixture
	c     client.Client // the admin, with Cluster API and Metal3 types
	objNS string
	node  string
	edits int
}

// TestChartLabelSyncRBACIsEnoughAndEveryRuleIsNeeded is the node sync's
// RBAC proof (TestChartRBACIsEnoughAndEveryRuleIsNeeded) for the label
// sync, in both shapes the chart grants it on default Secrets values: one
// ClusterRole without Secrets plus a Role granting get on secrets in the
// release namespace, where the objects then live (labelSync.namespaces
// empty), and a Role in the namespace served (labelSync.namespaces set).
// The shared API server gets Cluster API's
// Cluster and Machine CRDs (from the module go.mod requires) and the Metal3
// ones (test/crds/metal3); the chart is rendered with labelSync.enabled and
// nodeTagSync.enabled=false, its ServiceAccount, roles and bindings are
// applied, and the real `tagsync run` runs with the Deployment's own
// arguments (--controllers=labelsync, --namespaces from the chart) as the
// chart's ServiceAccount. The management cluster is its own workload
// cluster: a Cluster whose <cluster>-kubeconfig Secret holds the API
// server's admin kubeconfig, as Cluster API writes it for a self-hosted
// cluster. So the Node is written with those credentials, never the
// ServiceAccount's (which may not patch Nodes at all). With the chart's RBAC
// the host's label reaches its Node, a Node edit is reverted, the profile is
// Ready, its LabelsSynced events form a series, and nothing is forbidden.
// Then each verb of each rule of the label sync's role is removed in turn,
// a fresh process runs, and the test waits until the process reports the
// API server's refusal of exactly that verb on exactly that resource. With
// the ClusterRole, a Cluster outside the release namespace is also shown
// unreachable for want of its Secret, its Node untouched
// (secretsElsewhereForbidden).
func TestChartLabelSyncRBACIsEnoughAndEveryRuleIsNeeded(t *testing.T) {
	installLabelSyncCRDs(t)
	for _, tc := range []struct {
		name  string
		objNS string
		roles bool // labelSync.namespaces set: Roles, not a ClusterRole
	}{
		{"ClusterRole, Secrets in the release namespace", lsReleaseNS, false},
		{"Roles in labelSync.namespaces", "ls-rbac-scoped", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newLabelSyncRBACFixture(t, tc.objNS, tc.roles)

			t.Run("the chart's RBAC is enough for the label sync", f.fullSync)
			if !tc.roles {
				t.Run("a kubeconfig Secret in another namespace is forbidden", f.secretsElsewhereForbidden)
			}

			as := roleAblations(t, f.objs, func(role string) bool {
				return role == "tagsync-labelsync" || role == "tagsync-labelsync-secrets"
			})
			if len(as) != 16 {
				t.Fatalf("the label sync's role has %d verbs, want 16 (list and watch on 6 kinds, patch on profile status, get on secrets, create and patch on events)", len(as))
			}
			for _, a := range as {
				f.setTrigger(&a)
				t.Run("without "+a.String(), func(t *testing.T) { f.ablate(t, a) })
			}
		})
	}
}

// installLabelSyncCRDs installs Cluster API's Cluster and Machine CRDs and
// the Metal3 ones, waits until they are served, and removes them when the
// test ends.
func installLabelSyncCRDs(t testing.TB) {
	ctx := context.Background()
	dir, err := testenv.ModuleDir("sigs.k8s.io/cluster-api")
	must(t, err)
	bases := filepath.Join(dir, "core", "config", "crd", "bases")
	files := []string{filepath.Join(bases, "cluster.x-k8s.io_clusters.yaml"), filepath.Join(bases, "cluster.x-k8s.io_machines.yaml")}
	metal3, err := filepath.Glob(filepath.Join(kube.RootDir, "test", "crds", "metal3", "*.yaml"))
	must(t, err)
	var crds []*unstructured.Unstructured
	for _, file := range append(files, metal3...) {
		b, err := os.ReadFile(file)
		must(t, err)
		objs, err := decodeObjects(b)
		must(t, err)
		crds = append(crds, objs...)
	}
	apply(ctx, t, crds)
	deleteOnCleanup(t, crds...)
	for _, gvk := range []struct{ group, version, kind string }{
		{clusterv1.GroupVersion.Group, clusterv1.GroupVersion.Version, "ClusterList"},
		{clusterv1.GroupVersion.Group, clusterv1.GroupVersion.Version, "MachineList"},
		{labelsync.HostGVK.Group, labelsync.HostGVK.Version, "BareMetalHostList"},
		{labelsync.Metal3MachineGVK.Group, labelsync.Metal3MachineGVK.Version, "Metal3MachineList"},
		{labelsync.Metal3ClusterGVK.Group, labelsync.Metal3ClusterGVK.Version, "Metal3ClusterList"},
	} {
		eventually(t, gvk.kind+" served", func() string {
			var list unstructured.UnstructuredList
			list.SetAPIVersion(gvk.group + "/" + gvk.version)
			list.SetKind(gvk.kind)
			if err := kube.Client.List(ctx, &list); err != nil {
				return err.Error()
			}
			return ""
		})
	}
}

func newLabelSyncRBACFixture(t *testing.T, objNS string, roles bool) *labelsyncRBACFixture {
	ctx := context.Background()
	const ns = lsReleaseNS
	s := testenv.Scheme()
	must(t, clusterv1.AddToScheme(s))
	must(t, labelsync.AddToScheme(s))
	c, err := client.New(kube.Config, client.Options{Scheme: s})
	must(t, err)
	f := &labelsyncRBACFixture{rbacFixture: &rbacFixture{t: t, ctx: ctx, ns: ns}, c: c, objNS: objNS, node: objNS + "-node"}
	ensureNamespace(ctx, t, objNS)
	// No Azure in a Metal3 management cluster: the default chain, never
	// called.
	set := "azure.authMode=default,nodeTagSync.enabled=false,labelSync.enabled=true"
	if roles {
		set += ",labelSync.namespaces={" + objNS + "}"
	}
	f.objs = renderChart(t, ns, "--set", set)
	scoped, secrets := []string{}, []string{"Role " + ns}
	if roles {
		scoped, secrets = []string{objNS}, nil
	}
	checkLabelsyncRBACShape(t, f.objs, scoped, secrets)
	installRBAC(ctx, t, ns, f.objs)
	deleteOnCleanup(t, append(ofKind(f.objs, "RoleBinding"), ofKind(f.objs, "Role")...)...)
	if roles {
		// The Roles grant nothing outside objNS (and no earlier test's
		// ClusterRole lingers in the authorizer).
		f.waitAllowed(t, ablation{verb: "list", group: "metal3.io", resource: "baremetalhosts"}, false)
		f.waitAllowed(t, ablation{verb: "get", group: "", resource: "secrets", namespace: objNS + "-elsewhere"}, false)
	} else {
		// Secrets only in the release namespace, by default.
		f.waitAllowed(t, ablation{verb: "get", group: "", resource: "secrets"}, false)
		f.waitAllowed(t, ablation{verb: "get", group: "", resource: "secrets", namespace: lsElsewhere}, false)
		f.waitAllowed(t, ablation{verb: "get", group: "", resource: "secrets", namespace: ns}, true)
	}
	// The ServiceAccount itself may not touch Nodes: what the controller
	// writes there it writes with the kubeconfig Secret's credentials.
	f.waitAllowed(t, ablation{verb: "patch", group: "", resource: "nodes"}, false)
	f.seed(t)

	sa := oneOfKind(t, f.objs, "ServiceAccount").GetName()
	kubeconfig := writeKubeconfig(t, serviceAccountUser(ns, sa), serviceAccountGroups(ns)...)
	args := deploymentArgs(t, f.objs)
	want := []string{"--controllers=labelsync", "--azure-auth-mode=default"}
	if roles {
		want = append(want, "--namespaces="+objNS)
	}
	for _, w := range want {
		if !slices.Contains(args, w) {
			t.Fatalf("the chart's args %v lack %s", args, w)
		}
	}
	f.args = append(args, "--kubeconfig="+kubeconfig,
		"--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms", "--zap-log-level=debug")
	return f
}

// seed creates, in objNS, the workload cluster (its kubeconfig Secret with
// the API server's admin credentials, Metal3Cluster and Cluster, marked
// provisioned), a host labelled under lsPrefix whose Metal3Machine's
// Machine runs on the Node f.node, that Node, and a profile owning lsPrefix;
// and deletes them when the test ends.
func (f *labelsyncRBACFixture) seed(t *testing.T) {
	ns, ctx := f.objNS, f.ctx
	create := createDeletedAtEnd(t, ctx, f.c)
	create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.node, Labels: map[string]string{"other.example.com/keep": "yes"}}})
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lsCluster + "-kubeconfig",
		Labels: map[string]string{clusterv1.ClusterNameLabel: lsCluster}},
		Data: map[string][]byte{"value": kube.KubeConfig}})
	mk := lsObjects{t: t, ctx: ctx, c: f.c, ns: ns, create: create}
	mk.workloadCluster(lsCluster)
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
func (f *labelsyncRBACFixture) secretsElsewhereForbidden(t *testing.T) {
	const cluster, profile = "far", "far"
	node := lsElsewhere + "-node"
	ensureNamespace(f.ctx, t, lsElsewhere)
	create := createDeletedAtEnd(t, f.ctx, f.c)
	create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: lsElsewhere, Name: cluster + "-kubeconfig",
		Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}},
		Data: map[string][]byte{"value": kube.KubeConfig}})
	mk := lsObjects{t: t, ctx: f.ctx, c: f.c, ns: lsElsewhere, create: create}
	mk.workloadCluster(cluster)
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

// fullSync runs the controller with the chart's RBAC and checks every kind
// of API call it makes succeeds.
func (f *labelsyncRBACFixture) fullSync(t *testing.T) {
	p := startTagsync(t, "tagsync labelsync (chart RBAC)", f.args...)
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

	// A Node edit is reverted through the Node watch (with the kubeconfig
	// Secret's credentials).
	f.editNode(t)
	f.waitNodeLabel(t, lsValue)
	eventually(t, "LabelsSynced about "+lsProfile+" and a ClusterUnreachable series about "+lsUnreachable, func() string {
		var list eventsv1.EventList
		if err := kube.Client.List(f.ctx, &list, client.InNamespace(f.objNS)); err != nil {
			return err.Error()
		}
		synced, series := false, false
		for _, e := range list.Items {
			if e.ReportingController != "tagsync-"+labelsync.ControllerName {
				continue
			}
			synced = synced || e.Regarding.Name == lsProfile && e.Reason == labelsync.ReasonLabelsSynced
			series = series || e.Regarding.Name == lsUnreachable && e.Reason == labelsync.ReasonClusterUnreachable && e.Series != nil && e.Series.Count >= 2
		}
		if synced && series {
			return ""
		}
		return fmt.Sprintf("LabelsSynced about %s %v, series about %s %v, among %d events", lsProfile, synced, lsUnreachable, series, len(list.Items))
	})
	// What the chart's NOTES tell users to run.
	var core corev1.EventList
	must(t, kube.Client.List(f.ctx, &core, client.InNamespace(f.objNS),
		client.MatchingFields{"reportingComponent": "tagsync-" + labelsync.ControllerName}))
	if len(core.Items) == 0 {
		t.Errorf("no events found with the field selector reportingComponent=tagsync-%s the NOTES give", labelsync.ControllerName)
	}
	p.stop(t)
	if logs := p.logs(); grep(logs, "forbidden") != "" {
		t.Fatalf("with the chart's RBAC some request was forbidden:\n%s", grep(logs, "forbidden"))
	}
}

// setTrigger says what a run without the verb must do to need it. Most
// verbs need nothing: a fresh process lists and watches the six kinds,
// connects to the workload cluster (the Secret's GET), and its first pass
// over the unreachable profile records two ClusterUnreachable events about
// it (a create, then a PATCH into a series).
func (f *labelsyncRBACFixture) setTrigger(a *ablation) {
	switch {
	case a.verb == "list":
		// The informers' initial state comes over WATCH against this API
		// server and over LIST against those without streaming lists (see
		// rbacFixture.setTrigger); the process is run the way it talks to
		// them.
		a.env = []string{"KUBE_FEATURE_WatchListClient=false"}
	case a.resource == "labelsyncprofiles/status":
		// The status may already be what a pass would write: clear it, as
		// if the profile were new.
		a.prepare = func(t *testing.T) {
			o := &v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Namespace: f.objNS, Name: lsProfile}}
			must(t, f.c.Status().Patch(f.ctx, o, client.RawPatch("application/merge-patch+json", []byte(`{"status":null}`))))
		}
	}
}

// editNode changes the in-scope label on the Node, as an admin would.
func (f *labelsyncRBACFixture) editNode(t testing.TB) {
	t.Helper()
	f.edits++
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"edit-%d"}}}`, lsLabel, f.edits)
	must(t, mergePatch(f.ctx, kube.Client, nodeRef(f.node), patch))
}

// waitNodeLabel waits until the Node's in-scope label has value.
func (f *labelsyncRBACFixture) waitNodeLabel(t testing.TB, value string) {
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
	o.create(&v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: name}, Spec: v1alpha1.LabelSyncProfileSpec{
		HostSelector: metav1.LabelSelector{MatchLabels: map[string]string{"sync": name}},
		Prefixes:     []string{lsPrefix},
	}})
}

// workloadCluster creates a Metal3Cluster and its Cluster, marked
// provisioned.
func (o lsObjects) workloadCluster(name string) {
	o.t.Helper()
	m3c := &unstructured.Unstructured{}
	m3c.SetGroupVersionKind(labelsync.Metal3ClusterGVK)
	m3c.SetNamespace(o.ns)
	m3c.SetName(name)
	o.create(m3c)
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: name}, Spec: clusterv1.ClusterSpec{
		InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: labelsync.Metal3ClusterGVK.Group, Kind: "Metal3Cluster", Name: name},
	}}
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
	host := &labelsync.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	host.Labels["sync"] = profile
	o.create(host)
	machine := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-m",
		Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}},
		Spec: clusterv1.MachineSpec{ClusterName: cluster,
			Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To("bootstrap")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: labelsync.Metal3MachineGVK.Group, Kind: "Metal3Machine", Name: name + "-m"},
		}}
	o.create(machine)
	machine.Status.NodeRef = clusterv1.MachineNodeReference{Name: node}
	must(o.t, o.c.Status().Update(o.ctx, machine))
	m3m := &unstructured.Unstructured{}
	m3m.SetGroupVersionKind(labelsync.Metal3MachineGVK)
	m3m.SetNamespace(ns)
	m3m.SetName(machine.Name)
	m3m.SetAnnotations(map[string]string{labelsync.HostAnnotation: ns + "/" + name})
	m3m.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: machine.Name, UID: machine.UID, Controller: ptr.To(true)}})
	o.create(m3m)
	host.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: labelsync.Metal3MachineGVK.GroupVersion().String(), Kind: "Metal3Machine", Name: machine.Name, Namespace: ns}
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
