package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/controller/infratags"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/tags/tagstest"
	"github.com/tagsync/tagsync/internal/testenv/build"
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

// metadataSubject is the metadata controller's part of the RBAC proof, in
// objNS, against armsim seeded with a cluster's estate
// (armsimtest.ClusterEstate, classified by kubernetes.io_cluster.<infra>=owned).
// With the chart's RBAC a CloudMetadata with an AzureMetadata becomes Ready
// with the tags on every classified resource, an outside removal is
// repaired on request, an AWSMetadata reports the missing AWS provider,
// events and an event series are recorded, the audit log has the writes,
// and nothing is forbidden.
type metadataSubject struct {
	*rbacFixture
	objNS    string // namespace of the CloudMetadata, AzureMetadata, AWSMetadata
	estate   armsimtest.ClusterEstate
	requests int // sync requests made so far
}

func newMetadataSubject(objNS string) func(*rbacFixture) rbacSubject {
	return func(f *rbacFixture) rbacSubject { return &metadataSubject{rbacFixture: f, objNS: objNS} }
}

// setup seeds the estate and the metadata objects.
func (f *metadataSubject) setup(t *testing.T) {
	ensureNamespace(f.ctx, t, f.objNS)
	f.estate = armsimtest.ClusterEstate{Infra: "mdrbac", Tags: map[string]string{"kubernetes.io_cluster.mdrbac": "owned"}}
	must(t, f.estate.Seed(f.cloud.Server))
	f.seedObjects(t)
}

func (f *metadataSubject) checks() []rbacCheck { return nil }

// seedObjects creates the metadata objects and deletes them when the test
// ends.
func (f *metadataSubject) seedObjects(t *testing.T) {
	ns := f.objNS
	objs := []client.Object{
		build.AzureMetadata(mdAzure, build.Namespace(ns), build.Opcode(v1alpha1.OpcodeAdd), build.ResourceTags(f.requested()),
			build.Subscriptions(f.cloud.SubscriptionID)),
		build.CloudMetadata(mdCluster, build.Namespace(ns), build.Classifiers(f.estate.Tags), build.AzureRef(mdAzure)),
		build.AWSMetadata(mdAWSReq, build.Namespace(ns), build.Opcode(v1alpha1.OpcodeAdd), build.ResourceTags(map[string]string{"env": "prod"})),
		build.CloudMetadata(mdAWS, build.Namespace(ns), build.Classifiers(map[string]string{"kubernetes.io/cluster/mdrbac": "owned"}),
			build.AWSRef(mdAWSReq)),
		build.CloudMetadata(mdBroken, build.Namespace(ns), build.Classifiers(map[string]string{"kubernetes.io_cluster.none": "owned"}),
			build.AzureRef("missing-azure"), build.AWSRef("missing-aws")),
	}
	create := createDeletedAtEnd(t, f.ctx, kube.Client)
	for _, o := range objs {
		create(o)
	}
}

// requested are the tags the AzureMetadata adds.
func (f *metadataSubject) requested() map[string]string {
	return map[string]string{"env": "prod", "team": "platform"}
}

// classified are the IDs of the estate's resources and groups.
func (f *metadataSubject) classified() []string {
	return append(f.estate.ResourceIDs(), f.estate.GroupIDs()...)
}

// fullSync runs the controller with the chart's RBAC and checks every kind
// of API call it makes succeeds.
func (f *metadataSubject) fullSync(t *testing.T, p *tagsyncProc) {
	ids := f.classified()
	cm := f.waitCloudMetadata(t, mdCluster, metav1.ConditionTrue, metadata.ReasonApplied)
	if int(cm.Status.Matched) != len(ids) || int(cm.Status.InSync) != len(ids) {
		t.Errorf("CloudMetadata %s: matched %d, in sync %d; want %d each", mdCluster, cm.Status.Matched, cm.Status.InSync, len(ids))
	}
	waitARMTags(t, f.cloud, ids, f.requested())
	az := f.azureMetadata(t)
	if !meta.IsStatusConditionTrue(az.Status.Conditions, v1alpha1.ConditionApplied) || az.Status.CloudMetadata != mdCluster {
		t.Errorf("AzureMetadata %s status %+v: want Applied, by CloudMetadata %s", mdAzure, az.Status, mdCluster)
	}

	// An outside removal, repaired by a pass the user asks for: a watched
	// annotation, a second write, lastSyncRequest in the status.
	disk := f.estate.ID(f.cloud.SubscriptionID, armsim.TypeDisk, 0)
	must(t, f.cloud.Server.DeleteTags(disk, "env"))
	// The pass finds the removal once Resource Graph shows it.
	eventually(t, "Resource Graph showing the removal", func() string {
		if shows, err := f.cloud.Server.GraphShows(disk); err != nil || !shows {
			return fmt.Sprintf("not yet (%v)", err)
		}
		return ""
	})
	f.syncNow(t, mdCluster)
	waitARMTags(t, f.cloud, []string{disk}, f.requested())

	// The AWSMetadata's status says why nothing is applied (no AWS provider
	// in this process).
	waitAWSRequest(f.ctx, t, f.objNS, mdAWSReq, "to report "+metadata.ReasonProviderNotConfigured, func(c *metav1.Condition) bool {
		return c.Status == metav1.ConditionFalse && c.Reason == metadata.ReasonProviderNotConfigured
	})
	f.waitCloudMetadata(t, mdBroken, metav1.ConditionFalse, metadata.ReasonRefNotFound)

	// Events in the objects' namespace: TagsWritten on the AzureMetadata,
	// and the two RefNotFound events of one pass about the broken
	// CloudMetadata as a series (a PATCH).
	waitEvents(f.ctx, t, f.objNS, metadata.ControllerName,
		wantEvent{regarding: mdAzure, reason: metadata.ReasonTagsWritten},
		wantEvent{regarding: mdBroken, reason: metadata.ReasonRefNotFound, series: true})
	// The audit log (metadata.auditLog: stderr) has the writes.
	if got := strings.Count(p.logs(), `"object":{"kind":"AzureMetadata","namespace":"`+f.objNS+`","name":"`+mdAzure+`"`); got < len(ids) {
		t.Errorf("%d audit records of AzureMetadata %s on stderr, want at least %d (one per resource written)", got, mdAzure, len(ids))
	}
}

// waitAWSRequest waits until the Request condition of AWSMetadata
// namespace/name is one ok accepts, and returns it.
func waitAWSRequest(ctx context.Context, t testing.TB, namespace, name, what string, ok func(*metav1.Condition) bool) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	eventually(t, "AWSMetadata "+namespace+"/"+name+" "+what, func() string {
		var o v1alpha1.AWSMetadata
		if err := kube.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &o); err != nil {
			return err.Error()
		}
		if c = meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionRequest); c == nil || !ok(c) {
			return fmt.Sprintf("conditions %+v", o.Status.Conditions)
		}
		return ""
	})
	return c
}

// trigger says what a run without the verb must do to need it. Most verbs
// need nothing: a fresh process lists and watches the three kinds, and its
// first pass over the broken CloudMetadata creates a RefNotFound event and
// patches it into a series.
func (f *metadataSubject) trigger(a *ablation) {
	var o client.Object
	switch a.resource {
	case "awsmetadata/status":
		o = &v1alpha1.AWSMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: f.objNS, Name: mdAWSReq}}
	case "azuremetadata/status":
		o = &v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: f.objNS, Name: mdAzure}}
	case "cloudmetadata/status":
		o = &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: f.objNS, Name: mdCluster}}
	default:
		return
	}
	a.prepare = clearStatus(f.ctx, kube.Client, o)
}

// syncNow asks for a pass over the CloudMetadata and waits until one
// served the request.
func (f *metadataSubject) syncNow(t testing.TB, name string) {
	t.Helper()
	f.requests++
	value := fmt.Sprintf("md-rbac-%d", f.requests)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.SyncRequestAnnotation, value)
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
func (f *metadataSubject) waitCloudMetadata(t testing.TB, name string, status metav1.ConditionStatus, reason string) *v1alpha1.CloudMetadata {
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

func (f *metadataSubject) azureMetadata(t testing.TB) *v1alpha1.AzureMetadata {
	t.Helper()
	var o v1alpha1.AzureMetadata
	must(t, kube.Client.Get(f.ctx, client.ObjectKey{Namespace: f.objNS, Name: mdAzure}, &o))
	return &o
}

// openShiftSubject is the OpenShift adapter's part of the RBAC proof: the
// proposal's Infrastructure (its CRD from test/crds/openshift-seed) and a
// cluster's estate in armsim. The adapter creates its CloudMetadata and
// AzureMetadata in the release namespace, the engine tags the cluster's
// resources, the one resource that cannot take the tags is listed in the
// Infrastructure's status (CRD get, status patch), the outcome is an event
// in default, and a Day-2 change of the tags updates the AzureMetadata and
// reaches the resources.
type openShiftSubject struct {
	*rbacFixture
	infra  *unstructured.Unstructured
	zone   string   // the resource at the tag limit
	others []string // the estate's other resources and groups
}

func newOpenShiftSubject(f *rbacFixture) rbacSubject { return &openShiftSubject{rbacFixture: f} }

// setup seeds the estate, one resource of it already at the tag limit, and
// the Infrastructure.
func (s *openShiftSubject) setup(t *testing.T) {
	const infraID = "osrbac-1a2b3"
	estate := armsimtest.ClusterEstate{Infra: infraID, Tags: map[string]string{"kubernetes.io_cluster." + infraID: "owned"}}
	must(t, estate.Seed(s.cloud.Server))
	s.zone = estate.ID(s.cloud.SubscriptionID, armsim.TypeDNSZone, 0)
	must(t, s.cloud.Server.SetTags(s.zone, tagstest.Numbered("x", 14)))
	s.others = slices.DeleteFunc(append(estate.ResourceIDs(), estate.GroupIDs()...), func(id string) bool { return id == s.zone })

	s.infra = build.Infrastructure(build.Field(map[string]any{"platformSpec": map[string]any{
		"azure": map[string]any{"resourceTags": []any{map[string]any{"key": "env", "value": "prod"}, map[string]any{"key": "team", "value": "a"}}}}}, "spec"))
	createDeletedAtEnd(t, s.ctx, kube.Client)(s.infra)
	s.infra.Object["status"] = map[string]any{"infrastructureName": infraID,
		"platformStatus": map[string]any{"azure": map[string]any{"resourceGroupName": estate.ResourceGroup}}}
	must(t, kube.Client.Status().Update(s.ctx, s.infra))
	for _, o := range []client.Object{&v1alpha1.CloudMetadata{}, &v1alpha1.AzureMetadata{}} {
		t.Cleanup(func() { _ = kube.Client.DeleteAllOf(context.Background(), o, client.InNamespace(s.ns)) })
	}
}

// fullSync: the tags on the estate, the adapter's objects, the failing
// zone in the Infrastructure's status, the event, and a Day-2 change.
func (s *openShiftSubject) fullSync(t *testing.T, _ *tagsyncProc) {
	ctx := s.ctx
	waitARMTags(t, s.cloud, s.others, map[string]string{"env": "prod", "team": "a"})
	must(t, kube.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: infratags.CloudMetadataName}, &v1alpha1.CloudMetadata{}))
	must(t, kube.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: infratags.AzureMetadataName}, &v1alpha1.AzureMetadata{}))
	eventually(t, "the failing zone listed in the Infrastructure's status", func() string {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(infratags.InfrastructureGVK)
		if err := kube.Client.Get(ctx, client.ObjectKey{Name: infratags.InfrastructureName}, u); err != nil {
			return err.Error()
		}
		items, _, _ := unstructured.NestedSlice(u.Object, "status", "platformStatus", "azure", "resourceTags")
		if len(items) != 1 || !strings.EqualFold(fmt.Sprint(items[0].(map[string]any)["name"]), s.zone) {
			return fmt.Sprintf("status lists %v", items)
		}
		return ""
	})
	waitEvents(ctx, t, "default", infratags.ControllerName,
		wantEvent{regarding: infratags.InfrastructureName, reason: infratags.ReasonUserTagsFailed})

	// Day 2: the tags change; the adapter updates its AzureMetadata.
	must(t, kube.Client.Get(ctx, client.ObjectKeyFromObject(s.infra), s.infra))
	must(t, unstructured.SetNestedSlice(s.infra.Object, []any{map[string]any{"key": "team", "value": "b"}},
		"spec", "platformSpec", "azure", "resourceTags"))
	must(t, kube.Client.Update(ctx, s.infra))
	waitARMTags(t, s.cloud, s.others, map[string]string{"team": "b"})
}

func (s *openShiftSubject) checks() []rbacCheck { return nil }

// trigger is never called: the adapter's row ablates nothing.
func (s *openShiftSubject) trigger(*ablation) {}
