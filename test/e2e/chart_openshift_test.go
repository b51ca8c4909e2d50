package e2e_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tagsync/tagsync/internal/controller/infratags"
)

// openShiftCases are the chart's rows for the OpenShift adapter:
// ci/openshift-values.yaml, with owned tags set, with the node sync and
// metadata.namespaces, and without openshift.enabled (its values then
// change nothing). They check that --controllers gains infratags after
// metadata, --openshift-namespace is the release namespace, the owned-tag
// flags appear only when set, the adapter's RBAC has the shape the chart
// documents (checkInfratagsRBACShape), and the metadata controller keeps
// its own.
func openShiftCases() []chartCase {
	const values = "charts/tagsync/ci/openshift-values.yaml"
	owned := []string{"--openshift-azure-owned-tag", "--openshift-aws-owned-tag"}
	shape := func(scoped []string) func(*testing.T, []*unstructured.Unstructured) {
		return func(t *testing.T, objs []*unstructured.Unstructured) {
			checkInfratagsRBACShape(t, objs, chartNS)
			checkMetadataRBACShape(t, objs, scoped)
		}
	}
	adapter := []string{"--openshift-namespace=" + chartNS, "--audit-log=stderr"}
	return []chartCase{
		{name: "ci/openshift-values.yaml", values: values, controllers: "metadata,infratags",
			args: adapter, noArgs: append([]string{"--openshift-crd-poll-interval"}, owned...), check: shape(nil)},
		{name: "owned tags set", values: values, controllers: "metadata,infratags",
			set:    "openshift.azureOwnedTag=owner.{infraID},openshift.awsOwnedTag=example.com/owner/{infraID}",
			args:   append([]string{"--openshift-azure-owned-tag=owner.{infraID}", "--openshift-aws-owned-tag=example.com/owner/{infraID}"}, adapter...),
			noArgs: []string{"--openshift-crd-poll-interval"}, check: shape(nil)},
		{name: "with the node sync and metadata.namespaces", controllers: "nodetags,metadata,infratags",
			set:  "metadata.enabled=true,openshift.enabled=true,metadata.namespaces={tagsync-system,platform}",
			args: adapter, noArgs: append([]string{"--openshift-crd-poll-interval"}, owned...),
			namespaces: []string{"tagsync-system", "platform"}, check: shape([]string{"tagsync-system", "platform"})},
		{name: "ci/openshift-values.yaml without openshift.enabled", values: values, set: "openshift.enabled=false,openshift.azureOwnedTag=owner.{infraID}",
			controllers: "metadata", noArgs: append([]string{"--openshift-namespace"}, owned...), check: checkNoOpenShift},
	}
}

// checkNoOpenShift: without openshift.enabled (and no node sync), no role
// or binding of the adapter, and no events Role.
func checkNoOpenShift(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
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
