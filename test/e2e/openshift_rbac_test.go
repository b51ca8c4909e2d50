package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/controller/infratags"
)

// TestChartOpenShiftRBACIsEnough is the RBAC sufficiency proof of the
// OpenShift adapter: the chart rendered with metadata.enabled,
// openshift.enabled, nodeTagSync.enabled=false and metadata.namespaces set
// to the release namespace (so the engine kinds are granted there only, and
// the adapter's events about the cluster-scoped Infrastructure have only
// the events Role in default), its ServiceAccount, roles and bindings
// applied to the real API server with the proposal's Infrastructure CRD
// (test/crds/openshift-seed), and the real `tagsync run` with the
// Deployment's own arguments run as that ServiceAccount against armsim.
// The adapter creates its CloudMetadata and AzureMetadata in the release
// namespace, the engine tags the cluster's resources, the one resource
// that cannot take the tags is listed in the Infrastructure's status (CRD
// get, status patch), the outcome is an event in default, a Day-2 change
// of the tags updates the AzureMetadata and reaches the resources, and no
// request is forbidden. (That each verb is also needed -- the ablation half
// of the metadata controller's proof -- is not shown here.)
func TestChartOpenShiftRBACIsEnough(t *testing.T) {
	ctx := context.Background()
	const ns = "tagsync-system"
	objs := renderChart(t, ns, "--set",
		"azure.authMode=servicePrincipal,azure.clientID=from-chart,azure.tenantID=from-chart,azure.existingSecret=tagsync-azure,"+
			"nodeTagSync.enabled=false,metadata.enabled=true,openshift.enabled=true,metadata.namespaces={"+ns+"}")
	checkInfratagsRBACShape(t, objs, ns)
	installRBAC(ctx, t, ns, objs)
	deleteOnCleanup(t, append(ofKind(objs, "RoleBinding"), ofKind(objs, "Role")...)...)

	installInfrastructureCRD(ctx, t)

	cloud := armsimtest.Start(t)
	const infraID = "osrbac-1a2b3"
	estate := armsimtest.ClusterEstate{Infra: infraID, Tags: map[string]string{"kubernetes.io_cluster." + infraID: "owned"}}
	must(t, estate.Seed(cloud.Server))
	ids := append(estate.ResourceIDs(), estate.GroupIDs()...)
	// One resource already at the tag limit: it fails, and the adapter
	// lists it in the Infrastructure's status.
	zone := estate.ID(cloud.SubscriptionID, armsim.TypeDNSZone, 0)
	full := map[string]string{}
	for i := range 14 {
		full[fmt.Sprintf("x%02d", i)] = "v"
	}
	must(t, cloud.Server.SetTags(zone, full))
	var others []string
	for _, id := range ids {
		if id != zone {
			others = append(others, id)
		}
	}

	infra := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"platformSpec": map[string]any{
		"azure": map[string]any{"resourceTags": []any{map[string]any{"key": "env", "value": "prod"}, map[string]any{"key": "team", "value": "a"}}}}}}}
	infra.SetGroupVersionKind(infratags.InfrastructureGVK)
	infra.SetName(infratags.InfrastructureName)
	must(t, kube.Client.Create(ctx, infra))
	t.Cleanup(func() {
		if err := kube.Client.Delete(context.Background(), infra); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Infrastructure: %v", err)
		}
	})
	infra.Object["status"] = map[string]any{"infrastructureName": infraID,
		"platformStatus": map[string]any{"azure": map[string]any{"resourceGroupName": estate.ResourceGroup}}}
	must(t, kube.Client.Status().Update(ctx, infra))
	for _, o := range []client.Object{&v1alpha1.CloudMetadata{}, &v1alpha1.AzureMetadata{}} {
		t.Cleanup(func() { _ = kube.Client.DeleteAllOf(context.Background(), o, client.InNamespace(ns)) })
	}

	sa := oneOfKind(t, objs, "ServiceAccount").GetName()
	args := append(deploymentArgs(t, objs), "--kubeconfig="+writeKubeconfig(t, serviceAccountUser(ns, sa), serviceAccountGroups(ns)...),
		"--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms", "--zap-log-level=debug")
	wantArgs(t, args, "--controllers=metadata,infratags", "--openshift-namespace="+ns, "--namespaces="+ns)
	args = append(args, armsimFlags(t, cloud)...)
	p := startTagsync(t, "tagsync openshift (chart RBAC)", args...)

	waitAzureTags := func(ids []string, want map[string]string) {
		t.Helper()
		eventually(t, fmt.Sprintf("%v on %d resources", want, len(ids)), func() string {
			for _, id := range ids {
				got, err := cloud.Server.Tags(id)
				if err != nil {
					return err.Error()
				}
				for k, v := range want {
					if got[k] != v {
						return fmt.Sprintf("%s has %v", id, got)
					}
				}
			}
			return ""
		})
	}
	waitAzureTags(others, map[string]string{"env": "prod", "team": "a"})
	for _, o := range []client.Object{&v1alpha1.CloudMetadata{}, &v1alpha1.AzureMetadata{}} {
		name := infratags.CloudMetadataName
		if _, ok := o.(*v1alpha1.AzureMetadata); ok {
			name = infratags.AzureMetadataName
		}
		must(t, kube.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o))
	}
	eventually(t, "the failing zone listed in the Infrastructure's status", func() string {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(infratags.InfrastructureGVK)
		if err := kube.Client.Get(ctx, client.ObjectKey{Name: infratags.InfrastructureName}, u); err != nil {
			return err.Error()
		}
		items, _, _ := unstructured.NestedSlice(u.Object, "status", "platformStatus", "azure", "resourceTags")
		if len(items) != 1 || !strings.EqualFold(fmt.Sprint(items[0].(map[string]any)["name"]), zone) {
			return fmt.Sprintf("status lists %v", items)
		}
		return ""
	})
	eventually(t, "a UserTagsFailed event about the Infrastructure in default", func() string {
		var list eventsv1.EventList
		if err := kube.Client.List(ctx, &list, client.InNamespace("default")); err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			if e.ReportingController == "tagsync-"+infratags.ControllerName && e.Regarding.Name == infratags.InfrastructureName &&
				e.Reason == infratags.ReasonUserTagsFailed {
				return ""
			}
		}
		return fmt.Sprintf("%d events, none", len(list.Items))
	})

	// Day 2: the tags change; the adapter updates its AzureMetadata.
	must(t, kube.Client.Get(ctx, client.ObjectKeyFromObject(infra), infra))
	must(t, unstructured.SetNestedSlice(infra.Object, []any{map[string]any{"key": "team", "value": "b"}},
		"spec", "platformSpec", "azure", "resourceTags"))
	must(t, kube.Client.Update(ctx, infra))
	waitAzureTags(others, map[string]string{"team": "b"})

	p.stop(t)
	if strings.Contains(p.logs(), "forbidden") {
		t.Fatalf("with the chart's RBAC some request was forbidden:\n%s", grep(p.logs(), "forbidden"))
	}
}

// installInfrastructureCRD installs OpenShift's Infrastructure CRD
// (test/crds/openshift-seed), waits until it is served, and removes it when
// the test ends.
func installInfrastructureCRD(ctx context.Context, t testing.TB) {
	t.Helper()
	crd := readObjects(t, "test/crds/openshift-seed/infrastructures.config.openshift.io.yaml")
	apply(ctx, t, crd)
	deleteOnCleanup(t, crd...)
	eventually(t, "the Infrastructure CRD served", func() string {
		var list unstructured.UnstructuredList
		list.SetGroupVersionKind(infratags.InfrastructureGVK.GroupVersion().WithKind("InfrastructureList"))
		if err := kube.Client.List(ctx, &list); err != nil {
			return err.Error()
		}
		return ""
	})
}
