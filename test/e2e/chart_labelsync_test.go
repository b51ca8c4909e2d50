package e2e_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/controller/labelsync"
)

// labelsyncValues is the chart's values file for the label sync (the same
// file `make helm-check` lints and renders).
const labelsyncValues = "charts/tagsync/ci/labelsync-values.yaml"

// labelsyncClusterWideValues is the values file of the explicit choice to
// let the label sync read Secrets in every namespace.
const labelsyncClusterWideValues = "charts/tagsync/ci/labelsync-clusterwide-values.yaml"

// TestChartRendersTheLabelSync renders the chart with the label sync --
// ci/labelsync-values.yaml (alone, Roles in one namespace), on the defaults
// (with the node sync, a ClusterRole without Secrets and a Role granting
// get on secrets in the release namespace only), with
// labelSync.secrets.namespaces (that Role in each of them),
// ci/labelsync-clusterwide-values.yaml (get on secrets in a ClusterRole of
// its own), and with the metadata controller sharing the same namespaces --
// and checks the wiring: --controllers from
// the one helper, --namespaces exactly when namespaces are set, every flag
// one `tagsync run` knows, the RBAC shape (checkLabelsyncRBACShape), no Node
// rights for it, and that the real API server accepts every object
// (server-side dry-run apply, strict fields). Without labelSync.enabled its
// values change nothing.
func TestChartRendersTheLabelSync(t *testing.T) {
	ctx := context.Background()
	const ns = "tagsync-system"
	ensureNamespace(ctx, t, ns)
	runFlags := tagsyncRunFlags(t)
	file := filepath.Join(kube.RootDir, labelsyncValues)
	cases := []struct {
		name, controllers string
		flags             []string
		scoped            []string // labelSync.namespaces
		secrets           []string // where checkLabelsyncRBACShape wants the Secrets role
	}{
		{name: "ci/labelsync-values.yaml", controllers: "labelsync", flags: []string{"--values", file}, scoped: []string{"metal3"}},
		{name: "defaults with labelSync.enabled", controllers: "nodetags,labelsync", flags: []string{"--set", "labelSync.enabled=true"},
			secrets: []string{"Role " + ns}},
		{name: "with labelSync.secrets.namespaces", controllers: "nodetags,labelsync",
			flags:   []string{"--set", "labelSync.enabled=true,labelSync.secrets.namespaces={capi-a,capi-b}"},
			secrets: []string{"Role capi-a", "Role capi-b"}},
		{name: "ci/labelsync-clusterwide-values.yaml", controllers: "labelsync",
			flags: []string{"--values", filepath.Join(kube.RootDir, labelsyncClusterWideValues)}, secrets: []string{"ClusterRole "}},
		{name: "with the metadata controller on the same namespaces", controllers: "nodetags,metadata,labelsync",
			flags:  []string{"--set", "labelSync.enabled=true,metadata.enabled=true,labelSync.namespaces={metal3,platform},metadata.namespaces={platform,metal3}"},
			scoped: []string{"metal3", "platform"}},
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
			wantArgs(t, c.Args, "--controllers="+tc.controllers)
			if len(tc.scoped) == 0 {
				noArgs(t, c.Args, "--namespaces")
			} else {
				var got string
				for _, a := range c.Args {
					if v, ok := strings.CutPrefix(a, "--namespaces="); ok {
						got = v
					}
				}
				if !sameSet(strings.Split(got, ","), tc.scoped) {
					t.Errorf("--namespaces=%s, want %v", got, tc.scoped)
				}
			}
			checkLabelsyncRBACShape(t, objs, tc.scoped, tc.secrets)
			for _, where := range append(slices.Clone(tc.scoped), tc.secrets...) {
				if n, ok := strings.CutPrefix(where, "Role "); ok {
					where = n
				}
				if where != "ClusterRole " {
					ensureNamespace(ctx, t, where)
				}
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

	// Without labelSync.enabled its values change nothing.
	objs := renderChart(t, ns, "--values", file, "--set", "labelSync.enabled=false,nodeTagSync.enabled=true")
	args := deployment(t, objs).Spec.Template.Spec.Containers[0].Args
	wantArgs(t, args, "--controllers=nodetags")
	noArgs(t, args, "--namespaces")
	for _, kind := range []string{"ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"} {
		for _, o := range ofKind(objs, kind) {
			if strings.Contains(o.GetName(), "-labelsync") {
				t.Errorf("labelSync.enabled=false still renders %s %s/%s", kind, o.GetNamespace(), o.GetName())
			}
		}
	}
	if g := grants(t, append(ofKind(objs, "ClusterRole"), ofKind(objs, "Role")...)); slices.Contains(g, "get /secrets") {
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
	got := labelsyncRoles(t, objs, "tagsync-labelsync", want)
	wantWhere := []string{}
	if len(scoped) == 0 {
		wantWhere = []string{"ClusterRole "}
	}
	for _, ns := range scoped {
		wantWhere = append(wantWhere, "Role "+ns)
	}
	if !sameSet(got, wantWhere) || len(got) != len(wantWhere) {
		t.Errorf("the label sync's rules are in %q, want %q", got, wantWhere)
	}
	if got := labelsyncRoles(t, objs, "tagsync-labelsync-secrets", []string{getSecrets}); !sameSet(got, secrets) || len(got) != len(secrets) {
		t.Errorf("get on secrets for the label sync is in %q, want %q", got, secrets)
	}
	if !slices.Contains(secrets, "ClusterRole ") && slices.Contains(grants(t, ofKind(objs, "ClusterRole")), getSecrets) {
		t.Errorf("a ClusterRole grants %s although labelSync.secrets.clusterWide is not set", getSecrets)
	}
	if !slices.Contains(strings.Split(deploymentControllers(t, objs), ","), "nodetags") {
		if g := grants(t, append(ofKind(objs, "ClusterRole"), ofKind(objs, "Role")...)); slices.ContainsFunc(g, func(s string) bool {
			return strings.HasSuffix(s, " /nodes")
		}) {
			t.Errorf("without the node sync the chart still grants rights on Nodes: %v", g)
		}
	}
}

// labelsyncRoles checks the ClusterRoles and Roles called name: each is
// bound to the chart's ServiceAccount, grants exactly want, one group and
// resource per rule. It returns where they are ("ClusterRole ", or
// "Role <namespace>").
func labelsyncRoles(t *testing.T, objs []*unstructured.Unstructured, name string, want []string) []string {
	t.Helper()
	bound := controllerRoles(objs)
	var got []string
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, r := range ofKind(objs, kind) {
			if r.GetName() != name {
				continue
			}
			got = append(got, kind+" "+r.GetNamespace())
			if !bound[kind+"/"+r.GetName()] {
				t.Errorf("%s %s/%s is not bound to the chart's ServiceAccount", kind, r.GetNamespace(), r.GetName())
			}
			if g := grants(t, []*unstructured.Unstructured{r}); !sameSet(g, want) || len(g) != len(want) {
				t.Errorf("%s %s/%s grants %v, want %v", kind, r.GetNamespace(), r.GetName(), g, want)
			}
			rules, _, _ := unstructured.NestedSlice(r.Object, "rules")
			for i, rule := range rules {
				groups, _, _ := unstructured.NestedStringSlice(rule.(map[string]any), "apiGroups")
				resources, _, _ := unstructured.NestedStringSlice(rule.(map[string]any), "resources")
				if len(groups) != 1 || len(resources) != 1 {
					t.Errorf("%s %s/%s rule %d has groups %v and resources %v: keep one of each per rule", kind, r.GetNamespace(), r.GetName(), i, groups, resources)
				}
			}
		}
	}
	return got
}

// deploymentControllers is the Deployment's --controllers value.
func deploymentControllers(t testing.TB, objs []*unstructured.Unstructured) string {
	t.Helper()
	for _, a := range deployment(t, objs).Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--controllers="); ok {
			return v
		}
	}
	t.Fatal("the Deployment passes no --controllers")
	return ""
}

// TestChartRefusesLabelSyncSettingsThatCannotWork: helm template fails,
// saying what to set, on namespaces the metadata controller and the label
// sync disagree on (one --namespaces flag confines the whole process), on
// a malformed namespace, and with every controller off.
func TestChartRefusesLabelSyncSettingsThatCannotWork(t *testing.T) {
	cases := []struct {
		name, want string
		set        []string
	}{
		{"different namespaces", "metadata.namespaces [a] and labelSync.namespaces [b] differ",
			[]string{"metadata.enabled=true", "labelSync.enabled=true", "metadata.namespaces={a}", "labelSync.namespaces={b}"}},
		{"namespaces for one, all for the other", "metadata.namespaces [] and labelSync.namespaces [metal3] differ",
			[]string{"metadata.enabled=true", "labelSync.enabled=true", "labelSync.namespaces={metal3}"}},
		{"a namespace that is none", "/labelSync/namespaces/0", []string{"labelSync.enabled=true", "labelSync.namespaces={Metal3}"}},
		{"an unknown labelSync value", "additional properties 'prefixes' not allowed", []string{"labelSync.enabled=true", "labelSync.prefixes={a}"}},
		{"every controller off", "enable at least one controller", []string{"nodeTagSync.enabled=false", "labelSync.enabled=false"}},
		{"Secrets cluster-wide and in namespaces", "labelSync.secrets.clusterWide and labelSync.secrets.namespaces [a] are both set",
			[]string{"labelSync.enabled=true", "labelSync.secrets.clusterWide=true", "labelSync.secrets.namespaces={a}"}},
		{"Secrets settings with labelSync.namespaces", "labelSync.secrets is set while labelSync.namespaces [metal3] is",
			[]string{"labelSync.enabled=true", "labelSync.namespaces={metal3}", "labelSync.secrets.namespaces={a}"}},
		{"an unknown labelSync.secrets value", "additional properties 'names' not allowed", []string{"labelSync.enabled=true", "labelSync.secrets.names={a}"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "tagsync", chartDir()}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out, err := exec.Command(helmBinary(t), args...).CombinedOutput()
			if err == nil {
				t.Fatalf("helm template --set %v succeeded, want a failure", tc.set)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("helm template --set %v failed without saying %q:\n%s", tc.set, tc.want, out)
			}
		})
	}
}
