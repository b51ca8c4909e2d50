package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/controller/metadata"
)

// The metadata objects of the RBAC proof, in the fixture's namespace.
const (
	// mdCluster drives mdAzure over the estate: Ready, tags written.
	mdCluster = "cluster"
	mdAzure   = "cluster-azure"
	// mdAWS drives mdAWSReq; the process has no AWS provider, so the
	// request reports ProviderNotConfigured (an AWSMetadata status patch).
	mdAWS    = "cluster-aws"
	mdAWSReq = "cluster-aws"
	// mdBroken references a missing AzureMetadata and a missing
	// AWSMetadata: two RefNotFound events about it in one pass, the second
	// of which is a PATCH of the first (an event series).
	mdBroken = "broken"
)

// metadataRBACFixture is the cluster, cloud and chart the metadata
// controller's RBAC proof works on. It reuses rbacFixture's ablation
// machinery (ablate, waitAllowed) with the metadata objects' triggers.
type metadataRBACFixture struct {
	*rbacFixture
	objNS    string // namespace of the CloudMetadata, AzureMetadata, AWSMetadata
	estate   armsimtest.ClusterEstate
	requests int // sync requests made so far
}

// TestChartMetadataRBACIsEnoughAndEveryRuleIsNeeded is the node sync's RBAC
// proof (TestChartRBACIsEnoughAndEveryRuleIsNeeded) for the metadata
// controller, in both shapes the chart grants it: one ClusterRole
// (metadata.namespaces empty) and a Role in each namespace served
// (metadata.namespaces set). It renders the chart with metadata.enabled and
// nodeTagSync.enabled=false, applies its ServiceAccount, roles and bindings
// to the real API server, and runs the real `tagsync run` with the
// Deployment's own arguments (so --controllers=metadata and --namespaces
// come from the chart), as the chart's ServiceAccount, against armsim
// seeded with a cluster's estate (armsimtest.ClusterEstate, classified by
// kubernetes.io_cluster.<infra>=owned). With the chart's RBAC a
// CloudMetadata with an AzureMetadata becomes Ready with the tags on every
// classified resource, an outside removal is repaired on request, an
// AWSMetadata reports the missing AWS provider, events and an event series
// are recorded, and nothing is forbidden. Then each verb of each rule of
// the metadata role is removed in turn, a fresh process runs, and the test
// waits until the process reports the API server's refusal of exactly that
// verb on exactly that resource. Each run restores the role afterwards.
func TestChartMetadataRBACIsEnoughAndEveryRuleIsNeeded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		objNS string
		roles bool // metadata.namespaces set: Roles, not a ClusterRole
	}{
		{"ClusterRole", "md-rbac-cluster", false},
		{"Roles in metadata.namespaces", "md-rbac-scoped", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newMetadataRBACFixture(t, tc.objNS, tc.roles)

			t.Run("the chart's RBAC is enough for the metadata controller", f.fullSync)

			as := roleAblations(t, f.objs, func(role string) bool { return role == "tagsync-metadata" })
			if len(as) != 11 {
				t.Fatalf("the metadata role has %d verbs, want 11 (list and watch on 3 kinds, patch on 3 statuses, create and patch on events)", len(as))
			}
			for _, a := range as {
				f.setTrigger(&a)
				t.Run("without "+a.String(), func(t *testing.T) { f.ablate(t, a) })
			}
		})
	}
}

func newMetadataRBACFixture(t *testing.T, objNS string, roles bool) *metadataRBACFixture {
	ctx := context.Background()
	const ns = "tagsync-system"
	f := &metadataRBACFixture{rbacFixture: &rbacFixture{t: t, ctx: ctx, ns: ns}, objNS: objNS}
	ensureNamespace(ctx, t, objNS)
	set := "azure.authMode=servicePrincipal,azure.clientID=from-chart,azure.tenantID=from-chart,azure.existingSecret=tagsync-azure," +
		"nodeTagSync.enabled=false,metadata.enabled=true"
	if roles {
		set += ",metadata.namespaces={" + objNS + "}"
	}
	f.objs = renderChart(t, ns, "--set", set)
	checkMetadataRoles(t, f.objs, roles, objNS)
	installRBAC(ctx, t, ns, f.objs)
	// Roles are namespaced: remove them too, so no later test runs with
	// this one's grants.
	deleteOnCleanup(t, append(ofKind(f.objs, "RoleBinding"), ofKind(f.objs, "Role")...)...)
	if roles {
		// The Roles grant nothing outside objNS (and no earlier test's
		// ClusterRole lingers in the authorizer): the run below works with
		// the namespace's rights alone.
		f.waitAllowed(t, ablation{verb: "list", group: "tagsync.io", resource: "cloudmetadata"}, false)
		f.waitAllowed(t, ablation{verb: "create", group: "events.k8s.io", resource: "events", namespace: objNS + "-elsewhere"}, false)
	}

	f.cloud = armsimtest.Start(t)
	f.estate = armsimtest.ClusterEstate{Infra: "mdrbac", Tags: map[string]string{"kubernetes.io_cluster.mdrbac": "owned"}}
	must(t, f.estate.Seed(f.cloud.Server))
	f.seedObjects(t)

	sa := oneOfKind(t, f.objs, "ServiceAccount").GetName()
	kubeconfig := writeKubeconfig(t, serviceAccountUser(ns, sa), serviceAccountGroups(ns)...)
	args := deploymentArgs(t, f.objs)
	want := []string{"--controllers=metadata", "--audit-log=stderr"}
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
	f.args = append(f.args, armsimFlags(t, f.cloud)...)
	return f
}

// checkMetadataRoles checks the shape of the metadata RBAC: one
// ClusterRole and ClusterRoleBinding, or exactly one Role and RoleBinding
// in the namespace served, and nothing for the node sync.
func checkMetadataRoles(t *testing.T, objs []*unstructured.Unstructured, roles bool, objNS string) {
	t.Helper()
	var where []string
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		for _, o := range ofKind(objs, kind) {
			if o.GetName() == "tagsync-metadata" {
				where = append(where, kind+" "+o.GetNamespace())
			}
		}
	}
	want := []string{"ClusterRole ", "ClusterRoleBinding "}
	if roles {
		want = []string{"Role " + objNS, "RoleBinding " + objNS}
	}
	if !slices.Equal(where, want) {
		t.Fatalf("the metadata RBAC is %q, want %q", where, want)
	}
	if g := grants(t, ofKind(objs, "ClusterRole")); slices.Contains(g, "list /nodes") {
		t.Fatalf("nodeTagSync.enabled=false still grants the node sync's rules: %v", g)
	}
	if n := len(ofKind(objs, "NodeTagSync")); n != 0 {
		t.Fatalf("nodeTagSync.enabled=false still renders %d NodeTagSync", n)
	}
}

// seedObjects creates the metadata objects and deletes them when the test
// ends.
func (f *metadataRBACFixture) seedObjects(t *testing.T) {
	ns := f.objNS
	ref := func(name string) *v1alpha1.LocalObjectRef { return &v1alpha1.LocalObjectRef{Name: name} }
	objs := []client.Object{
		&v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: mdAzure},
			Spec: v1alpha1.AzureMetadataSpec{Opcode: v1alpha1.OpcodeAdd, ResourceTags: f.requested(),
				Subscriptions: []string{f.cloud.SubscriptionID}}},
		&v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: mdCluster},
			Spec: v1alpha1.CloudMetadataSpec{Classifiers: f.estate.Tags,
				CloudProvider: v1alpha1.CloudProviderRefs{AzureRef: ref(mdAzure)}}},
		&v1alpha1.AWSMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: mdAWSReq},
			Spec: v1alpha1.AWSMetadataSpec{Opcode: v1alpha1.OpcodeAdd, ResourceTags: map[string]string{"env": "prod"}}},
		&v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: mdAWS},
			Spec: v1alpha1.CloudMetadataSpec{Classifiers: map[string]string{"kubernetes.io/cluster/mdrbac": "owned"},
				CloudProvider: v1alpha1.CloudProviderRefs{AWSRef: ref(mdAWSReq)}}},
		&v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: mdBroken},
			Spec: v1alpha1.CloudMetadataSpec{Classifiers: map[string]string{"kubernetes.io_cluster.none": "owned"},
				CloudProvider: v1alpha1.CloudProviderRefs{AzureRef: ref("missing-azure"), AWSRef: ref("missing-aws")}}},
	}
	for _, o := range objs {
		must(t, kube.Client.Create(f.ctx, o))
	}
	t.Cleanup(func() {
		for _, o := range objs {
			if err := kube.Client.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T %s: %v", o, o.GetName(), err)
			}
		}
	})
}

// requested are the tags the AzureMetadata adds.
func (f *metadataRBACFixture) requested() map[string]string {
	return map[string]string{"env": "prod", "team": "platform"}
}

// classified are the IDs of the estate's resources and groups.
func (f *metadataRBACFixture) classified() []string {
	return append(f.estate.ResourceIDs(), f.estate.GroupIDs()...)
}

// fullSync runs the controller with the chart's RBAC and checks every kind
// of API call it makes succeeds.
func (f *metadataRBACFixture) fullSync(t *testing.T) {
	p := startTagsync(t, "tagsync metadata (chart RBAC)", f.args...)
	ids := f.classified()
	cm := f.waitCloudMetadata(t, mdCluster, metav1.ConditionTrue, metadata.ReasonApplied)
	if int(cm.Status.Matched) != len(ids) || int(cm.Status.InSync) != len(ids) {
		t.Errorf("CloudMetadata %s: matched %d, in sync %d; want %d each", mdCluster, cm.Status.Matched, cm.Status.InSync, len(ids))
	}
	f.waitTagged(t, ids)
	az := f.azureMetadata(t)
	if !meta.IsStatusConditionTrue(az.Status.Conditions, v1alpha1.ConditionApplied) || az.Status.CloudMetadata != mdCluster {
		t.Errorf("AzureMetadata %s status %+v: want Applied, by CloudMetadata %s", mdAzure, az.Status, mdCluster)
	}

	// An outside removal, repaired by a pass the user asks for: a watched
	// annotation, a second write, lastSyncRequest in the status.
	disk := f.estate.ID(f.cloud.SubscriptionID, armsim.TypeDisk, 0)
	must(t, f.cloud.Server.DeleteTags(disk, "env"))
	f.syncNow(t, mdCluster)
	f.waitTagged(t, []string{disk})

	// The AWSMetadata's status says why nothing is applied (no AWS provider
	// in this process).
	eventually(t, "AWSMetadata "+mdAWSReq+" to report "+metadata.ReasonProviderNotConfigured, func() string {
		var o v1alpha1.AWSMetadata
		if err := kube.Client.Get(f.ctx, client.ObjectKey{Namespace: f.objNS, Name: mdAWSReq}, &o); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionRequest)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != metadata.ReasonProviderNotConfigured {
			return fmt.Sprintf("conditions %+v", o.Status.Conditions)
		}
		return ""
	})
	f.waitCloudMetadata(t, mdBroken, metav1.ConditionFalse, metadata.ReasonRefNotFound)

	// Events in the objects' namespace: TagsWritten on the AzureMetadata,
	// and the two RefNotFound events of one pass about the broken
	// CloudMetadata as a series (a PATCH).
	eventually(t, "TagsWritten about AzureMetadata "+mdAzure+" and a RefNotFound series about CloudMetadata "+mdBroken, func() string {
		var list eventsv1.EventList
		if err := kube.Client.List(f.ctx, &list, client.InNamespace(f.objNS)); err != nil {
			return err.Error()
		}
		written, series := false, false
		for _, e := range list.Items {
			if e.ReportingController != "tagsync-"+metadata.ControllerName {
				continue
			}
			written = written || e.Regarding.Name == mdAzure && e.Reason == metadata.ReasonTagsWritten
			series = series || e.Regarding.Name == mdBroken && e.Reason == metadata.ReasonRefNotFound && e.Series != nil && e.Series.Count >= 2
		}
		if !written || !series {
			return fmt.Sprintf("TagsWritten %v, series %v among %d events", written, series, len(list.Items))
		}
		return ""
	})
	// What the chart's NOTES tell users to run:
	// kubectl get events -n <namespace> --field-selector reportingComponent=tagsync-metadata
	var core corev1.EventList
	must(t, kube.Client.List(f.ctx, &core, client.InNamespace(f.objNS),
		client.MatchingFields{"reportingComponent": "tagsync-" + metadata.ControllerName}))
	if len(core.Items) == 0 {
		t.Errorf("no events found with the field selector reportingComponent=tagsync-%s the NOTES give", metadata.ControllerName)
	}
	// The audit log (metadata.auditLog: stderr) has the writes.
	if got := strings.Count(p.logs(), `"object":{"kind":"AzureMetadata","namespace":"`+f.objNS+`","name":"`+mdAzure+`"`); got < len(ids) {
		t.Errorf("%d audit records of AzureMetadata %s on stderr, want at least %d (one per resource written)", got, mdAzure, len(ids))
	}
	if body := scrape(t, p); !strings.Contains(body, "tagsync_metadata_passes_total{") {
		t.Errorf("the metrics lack tagsync_metadata_passes_total:\n%s", tail(body, 40))
	}
	p.stop(t)
	if strings.Contains(p.logs(), "forbidden") {
		t.Fatalf("with the chart's RBAC some request was forbidden:\n%s", grep(p.logs(), "forbidden"))
	}
}

// setTrigger says what a run without the verb must do to need it. Most
// verbs need nothing: a fresh process lists and watches the three kinds,
// and its first pass over the broken CloudMetadata
// creates a RefNotFound event and patches it into a series.
func (f *metadataRBACFixture) setTrigger(a *ablation) {
	switch {
	case a.verb == "list":
		// The informers' initial state comes over WATCH against this API
		// server and over LIST against those without streaming lists (see
		// rbacFixture.setTrigger); the process is run the way it talks to
		// them.
		a.env = []string{"KUBE_FEATURE_WatchListClient=false"}
	case strings.HasSuffix(a.resource, "/status"):
		// A status is patched only when it changes, and the fixture's are
		// current: clear the one the verb writes, as if the object were new.
		var o client.Object
		switch a.resource {
		case "awsmetadata/status":
			o = &v1alpha1.AWSMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: f.objNS, Name: mdAWSReq}}
		case "azuremetadata/status":
			o = &v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: f.objNS, Name: mdAzure}}
		default:
			o = &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: f.objNS, Name: mdCluster}}
		}
		a.prepare = func(t *testing.T) {
			must(t, kube.Client.Status().Patch(f.ctx, o, client.RawPatch("application/merge-patch+json", []byte(`{"status":null}`))))
		}
	}
}

// syncNow asks for a pass over the CloudMetadata and waits until one
// served the request.
func (f *metadataRBACFixture) syncNow(t testing.TB, name string) {
	t.Helper()
	f.requests++
	value := fmt.Sprintf("md-rbac-%d", f.requests)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, metadata.SyncRequestAnnotation, value)
	must(t, mergePatch(f.ctx, kube.Client, &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: f.objNS, Name: name}}, patch))
	eventually(t, "CloudMetadata "+name+" to serve sync request "+value, func() string {
		var cm v1alpha1.CloudMetadata
		if err := kube.Client.Get(f.ctx, client.ObjectKey{Namespace: f.objNS, Name: name}, &cm); err != nil {
			return err.Error()
		}
		if cm.Status.LastSyncRequest != value {
			return fmt.Sprintf("lastSyncRequest %q", cm.Status.LastSyncRequest)
		}
		return ""
	})
}

// waitCloudMetadata waits until the CloudMetadata's Ready condition has
// the status and reason, for its current generation.
func (f *metadataRBACFixture) waitCloudMetadata(t testing.TB, name string, status metav1.ConditionStatus, reason string) *v1alpha1.CloudMetadata {
	t.Helper()
	var cm v1alpha1.CloudMetadata
	eventually(t, fmt.Sprintf("CloudMetadata %s Ready=%s (%s)", name, status, reason), func() string {
		if err := kube.Client.Get(f.ctx, client.ObjectKey{Namespace: f.objNS, Name: name}, &cm); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(cm.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != cm.Generation {
			return fmt.Sprintf("status %+v", cm.Status)
		}
		return ""
	})
	return &cm
}

// waitTagged waits until every resource of ids carries the requested tags.
func (f *metadataRBACFixture) waitTagged(t testing.TB, ids []string) {
	t.Helper()
	eventually(t, fmt.Sprintf("the requested tags on %d classified resource(s)", len(ids)), func() string {
		for _, id := range ids {
			tags, err := f.cloud.Server.Tags(id)
			if err != nil {
				return err.Error()
			}
			for k, v := range f.requested() {
				if tags[k] != v {
					return fmt.Sprintf("%s has %v", id, tags)
				}
			}
		}
		return ""
	})
}

func (f *metadataRBACFixture) azureMetadata(t testing.TB) *v1alpha1.AzureMetadata {
	t.Helper()
	var o v1alpha1.AzureMetadata
	must(t, kube.Client.Get(f.ctx, client.ObjectKey{Namespace: f.objNS, Name: mdAzure}, &o))
	return &o
}
