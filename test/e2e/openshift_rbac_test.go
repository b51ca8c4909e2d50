package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/controller/infratags"
)

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
	full := map[string]string{}
	for i := range 14 {
		full[fmt.Sprintf("x%02d", i)] = "v"
	}
	must(t, s.cloud.Server.SetTags(s.zone, full))
	s.others = slices.DeleteFunc(append(estate.ResourceIDs(), estate.GroupIDs()...), func(id string) bool { return id == s.zone })

	s.infra = &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"platformSpec": map[string]any{
		"azure": map[string]any{"resourceTags": []any{map[string]any{"key": "env", "value": "prod"}, map[string]any{"key": "team", "value": "a"}}}}}}}
	s.infra.SetGroupVersionKind(infratags.InfrastructureGVK)
	s.infra.SetName(infratags.InfrastructureName)
	must(t, kube.Client.Create(s.ctx, s.infra))
	t.Cleanup(func() {
		if err := kube.Client.Delete(context.Background(), s.infra); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Infrastructure: %v", err)
		}
	})
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
