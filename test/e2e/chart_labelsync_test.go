package e2e_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tagsync/tagsync/internal/controller/labelsync"
)

// labelSyncCases are the chart's rows for the label sync:
// ci/labelsync-values.yaml (alone, Roles in one namespace), on the defaults
// (with the node sync, a ClusterRole without Secrets and a Role granting
// get on secrets in the release namespace only), with
// labelSync.secrets.namespaces (that Role in each of them),
// ci/labelsync-clusterwide-values.yaml (get on secrets in a ClusterRole of
// its own), with the metadata controller sharing the same namespaces, and
// without labelSync.enabled (its values then change nothing). They check
// --namespaces exactly when namespaces are set, the RBAC shape
// (checkLabelsyncRBACShape) and no Node rights for it.
func labelSyncCases() []chartCase {
	const values = "charts/tagsync/ci/labelsync-values.yaml"
	shape := func(scoped, secrets []string) func(*testing.T, []*unstructured.Unstructured) {
		return func(t *testing.T, objs []*unstructured.Unstructured) {
			checkLabelsyncRBACShape(t, objs, scoped, secrets)
		}
	}
	return []chartCase{
		{name: "ci/labelsync-values.yaml", values: values, controllers: "labelsync",
			namespaces: []string{"metal3"}, check: shape([]string{"metal3"}, nil)},
		{name: "defaults with labelSync.enabled", set: "labelSync.enabled=true", controllers: "nodetags,labelsync",
			noArgs: []string{"--namespaces"}, check: shape(nil, []string{"Role " + chartNS})},
		{name: "with labelSync.secrets.namespaces", set: "labelSync.enabled=true,labelSync.secrets.namespaces={capi-a,capi-b}",
			controllers: "nodetags,labelsync", noArgs: []string{"--namespaces"}, check: shape(nil, []string{"Role capi-a", "Role capi-b"})},
		{name: "ci/labelsync-clusterwide-values.yaml", values: "charts/tagsync/ci/labelsync-clusterwide-values.yaml", controllers: "labelsync",
			noArgs: []string{"--namespaces"}, check: shape(nil, []string{"ClusterRole "})},
		{name: "with the metadata controller on the same namespaces", controllers: "nodetags,metadata,labelsync",
			set:        "labelSync.enabled=true,metadata.enabled=true,labelSync.namespaces={metal3,platform},metadata.namespaces={platform,metal3}",
			namespaces: []string{"metal3", "platform"}, check: shape([]string{"metal3", "platform"}, nil)},
		{name: "ci/labelsync-values.yaml without labelSync.enabled", values: values, set: "labelSync.enabled=false,nodeTagSync.enabled=true",
			controllers: "nodetags", noArgs: []string{"--namespaces"}, check: checkNoLabelSync},
	}
}

// checkNoLabelSync: without labelSync.enabled, no role or binding of the
// label sync, and nothing grants get on secrets.
func checkNoLabelSync(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, kind := range []string{"ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"} {
		for _, o := range ofKind(objs, kind) {
			if strings.Contains(o.GetName(), "-labelsync") {
				t.Errorf("labelSync.enabled=false still renders %s %s/%s", kind, o.GetNamespace(), o.GetName())
			}
		}
	}
	if g := grants(t, append(ofKind(objs, "ClusterRole"), ofKind(objs, "Role")...)); slices.Contains(g, getSecrets) {
		t.Errorf("labelSync.enabled=false still grants get on secrets: %v", g)
	}
}

// getSecrets is the label sync's one rule on Secrets, as grants words it.
const getSecrets = "get /secrets"

// checkLabelsyncRBACShape: the label sync's rules are exactly the
// registry's (operator.Controllers), one group and resource per rule. With
// scoped set, a Role tagsync-labelsync in each namespace of scoped and
// nowhere else grants them all, Secrets included, and secrets must be
// empty. Without, one ClusterRole tagsync-labelsync grants all but get on
// secrets, which comes from a tagsync-labelsync-secrets role at each place
// of secrets ("Role <namespace>", or "ClusterRole " for the cluster-wide
// choice) and nowhere else, and no other ClusterRole grants it. Each is
// bound to the chart's ServiceAccount. None of the chart's roles gives it
// Nodes: it writes them with the workload clusters' own credentials.
func checkLabelsyncRBACShape(t *testing.T, objs []*unstructured.Unstructured, scoped, secrets []string) {
	t.Helper()
	want := registryGrants(t, labelsync.ControllerName)
	if !slices.Contains(want, getSecrets) {
		t.Fatalf("the registry's label sync rules %v lack %s", want, getSecrets)
	}
	if len(scoped) == 0 {
		want = slices.DeleteFunc(slices.Clone(want), func(g string) bool { return g == getSecrets })
	}
	if got, want := rolesNamed(t, objs, "tagsync-labelsync", want), roleSites(scoped); !sameElements(got, want) {
		t.Errorf("the label sync's rules are in %q, want %q", got, want)
	}
	if got := rolesNamed(t, objs, "tagsync-labelsync-secrets", []string{getSecrets}); !sameElements(got, secrets) {
		t.Errorf("get on secrets for the label sync is in %q, want %q", got, secrets)
	}
	if !slices.Contains(secrets, "ClusterRole ") && slices.Contains(grants(t, ofKind(objs, "ClusterRole")), getSecrets) {
		t.Errorf("a ClusterRole grants %s although labelSync.secrets.clusterWide is not set", getSecrets)
	}
	if !slices.Contains(strings.Split(argValue(deploymentArgs(t, objs), "--controllers"), ","), "nodetags") {
		if g := grants(t, append(ofKind(objs, "ClusterRole"), ofKind(objs, "Role")...)); slices.ContainsFunc(g, func(s string) bool {
			return strings.HasSuffix(s, " /nodes")
		}) {
			t.Errorf("without the node sync the chart still grants rights on Nodes: %v", g)
		}
	}
}
