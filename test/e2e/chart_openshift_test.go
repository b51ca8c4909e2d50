package e2e_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/controller/infratags"
)

// openshiftValues is the chart's values file for the OpenShift adapter (the
// same file `make helm-check` lints and renders).
const openshiftValues = "charts/tagsync/ci/openshift-values.yaml"

// TestChartRendersTheOpenShiftAdapter renders the chart with the OpenShift
// adapter -- ci/openshift-values.yaml, with owned tags set, and with
// metadata.namespaces -- and checks the wiring: --controllers gains
// infratags after metadata, --openshift-namespace is the release namespace,
// the owned-tag flags appear only when set, every flag is one `tagsync run`
// knows, the adapter's RBAC has the shape the chart documents
// (checkInfratagsRBACShape), the metadata controller keeps its own, and the
// real API server accepts every object (server-side dry-run apply, strict
// fields). Without openshift.enabled its values change nothing.
func TestChartRendersTheOpenShiftAdapter(t *testing.T) {
	ctx := context.Background()
	const ns = "tagsync-system"
	ensureNamespace(ctx, t, ns)
	runFlags := tagsyncRunFlags(t)
	file := filepath.Join(kube.RootDir, openshiftValues)
	cases := []struct {
		name, controllers string
		flags             []string
		owned             []string // the owned-tag flags expected
		scoped            []string // metadata.namespaces
	}{
		{name: "ci/openshift-values.yaml", controllers: "metadata,infratags", flags: []string{"--values", file}},
		{name: "owned tags set", controllers: "metadata,infratags",
			flags: []string{"--values", file, "--set", "openshift.azureOwnedTag=owner.{infraID},openshift.awsOwnedTag=example.com/owner/{infraID}"},
			owned: []string{"--openshift-azure-owned-tag=owner.{infraID}", "--openshift-aws-owned-tag=example.com/owner/{infraID}"}},
		{name: "with the node sync and metadata.namespaces", controllers: "nodetags,metadata,infratags",
			flags:  []string{"--set", "metadata.enabled=true,openshift.enabled=true,metadata.namespaces={tagsync-system,platform}"},
			scoped: []string{"tagsync-system", "platform"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderChart(t, ns, tc.flags...)
			c := deployment(t, objs).Spec.Template.Spec.Containers[0]
			for _, arg := range c.Args[1:] {
				flag, _, _ := strings.Cut(arg, "=")
				if !slices.Contains(runFlags, flag) {
					t.Errorf("the chart passes %s, which `tagsync run` does not know", flag)
				}
			}
			wantArgs(t, c.Args, append([]string{"--controllers=" + tc.controllers, "--openshift-namespace=" + ns, "--audit-log=stderr"}, tc.owned...)...)
			if len(tc.owned) == 0 {
				noArgs(t, c.Args, "--openshift-azure-owned-tag", "--openshift-aws-owned-tag")
			}
			noArgs(t, c.Args, "--openshift-crd-poll-interval")
			checkInfratagsRBACShape(t, objs, ns)
			checkMetadataRBACShape(t, objs, tc.scoped)
			for _, n := range tc.scoped {
				ensureNamespace(ctx, t, n)
			}
			var serverSide []*unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() != "ServiceMonitor" {
					serverSide = append(serverSide, o)
				}
			}
			apply(ctx, t, serverSide, client.DryRunAll)
		})
	}

	// Without openshift.enabled the adapter's values change nothing.
	objs := renderChart(t, ns, "--values", file, "--set", "openshift.enabled=false,openshift.azureOwnedTag=owner.{infraID}")
	args := deployment(t, objs).Spec.Template.Spec.Containers[0].Args
	wantArgs(t, args, "--controllers=metadata")
	noArgs(t, args, "--openshift-namespace", "--openshift-azure-owned-tag", "--openshift-aws-owned-tag")
	for _, kind := range []string{"ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"} {
		for _, o := range ofKind(objs, kind) {
			if strings.HasSuffix(o.GetName(), "-infratags") || o.GetName() == "tagsync-events" {
				t.Errorf("openshift.enabled=false (and no node sync) still renders %s %s/%s", kind, o.GetNamespace(), o.GetName())
			}
		}
	}
}

// checkInfratagsRBACShape: the OpenShift adapter's rules, bound to the
// chart's ServiceAccount, are a ClusterRole tagsync-infratags with the
// registry's config.openshift.io and apiextensions.k8s.io rules (the CRD
// narrowed to the Infrastructure's by resourceNames), a Role
// tagsync-infratags in the release namespace with the registry's create and
// update on the engine kinds and nothing else, and the events.k8s.io Role
// in rbac.eventsNamespace (default); the registry's list and watch on the
// engine kinds come from the metadata controller's role, checked by
// checkMetadataRBACShape.
func checkInfratagsRBACShape(t *testing.T, objs []*unstructured.Unstructured, releaseNS string) {
	t.Helper()
	registry := registryGrants(t, infratags.ControllerName)
	bound := controllerRoles(objs)
	role := func(kind, ns, name string) *unstructured.Unstructured {
		for _, r := range ofKind(objs, kind) {
			if r.GetName() == name && r.GetNamespace() == ns {
				if !bound[kind+"/"+name] {
					t.Errorf("%s %s/%s is not bound to the chart's ServiceAccount", kind, ns, name)
				}
				return r
			}
		}
		t.Fatalf("no %s %s/%s", kind, ns, name)
		return nil
	}
	pick := func(keep func(g string) bool) []string {
		var out []string
		for _, g := range registry {
			if keep(g) {
				out = append(out, g)
			}
		}
		return out
	}
	engineWrite := func(g string) bool {
		return strings.HasPrefix(g, "create tagsync.io/") || strings.HasPrefix(g, "update tagsync.io/")
	}
	cluster := role("ClusterRole", "", "tagsync-infratags")
	wantCluster := pick(func(g string) bool {
		return !strings.Contains(g, " tagsync.io/") && !strings.Contains(g, " events.k8s.io/")
	})
	if g := grants(t, []*unstructured.Unstructured{cluster}); !sameSet(g, wantCluster) {
		t.Errorf("ClusterRole tagsync-infratags grants %v, want the registry's %v", g, wantCluster)
	}
	rules, _, _ := unstructured.NestedSlice(cluster.Object, "rules")
	for _, r := range rules {
		rule := r.(map[string]any)
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
		if slices.Contains(resources, "customresourcedefinitions") && !slices.Equal(names, []string{infratags.InfrastructureCRD}) {
			t.Errorf("ClusterRole tagsync-infratags: the CRD rule names %v, want only %s", names, infratags.InfrastructureCRD)
		}
	}
	local := role("Role", releaseNS, "tagsync-infratags")
	if g, want := grants(t, []*unstructured.Unstructured{local}), pick(engineWrite); !sameSet(g, want) {
		t.Errorf("Role %s/tagsync-infratags grants %v, want the registry's %v", releaseNS, g, want)
	}
	events := role("Role", "default", "tagsync-events")
	if g, want := grants(t, []*unstructured.Unstructured{events}), pick(func(g string) bool { return strings.HasSuffix(g, " events.k8s.io/events") }); !sameSet(g, want) {
		t.Errorf("Role default/tagsync-events grants %v, want the registry's %v", g, want)
	}
	// Nowhere else: no other role mentions the adapter's resources or
	// writes the engine kinds.
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, r := range ofKind(objs, kind) {
			if r.GetName() == "tagsync-infratags" {
				continue
			}
			for _, g := range grants(t, []*unstructured.Unstructured{r}) {
				if strings.Contains(g, "config.openshift.io/") || strings.Contains(g, "customresourcedefinitions") || engineWrite(g) {
					t.Errorf("%s %s/%s grants %s too", kind, r.GetNamespace(), r.GetName(), g)
				}
			}
		}
	}
}
