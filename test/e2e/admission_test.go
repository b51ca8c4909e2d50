package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

const (
	policyName = "tagsync-node-label-guard"
	// policyDenial is how the API server words a denial by the chart's policy.
	policyDenial = "ValidatingAdmissionPolicy '" + policyName + "' with binding '" + policyName + "' denied request"
)

// TestAdmissionPolicyKeepsKubeletsAwayFromSyncedLabels applies the chart's
// ValidatingAdmissionPolicy and binding to the real API server and proves:
// a kubelet identity (system:node:<name>, group system:nodes) could change a
// synced label before the policy (so the threat is real and the later
// denials come from the policy, not RBAC), and cannot add, change or remove
// labels under the managed prefix (through nodes or nodes/status), forge the
// merge-base annotation, or register a Node carrying synced labels once the
// policy is active; everything else a kubelet does still works; and the
// controller (the chart's ServiceAccount, with the chart's RBAC) and
// administrators may still write synced labels.
func TestAdmissionPolicyKeepsKubeletsAwayFromSyncedLabels(t *testing.T) {
	ctx := context.Background()
	const ns = chartNS
	objs := installDefaultChart(ctx, t)

	node := "vap-node-0"
	base := `{"env":"prod"}`
	must(t, kube.Client.Create(ctx, build.Node(node,
		build.Labels(map[string]string{"azure.tags/env": "prod", "kubernetes.io/hostname": node}),
		build.Annotation(v1alpha1.LastSyncedTagsAnnotation, base))))
	grantNodesWrite(ctx, t)
	kubelet := impersonatingClient(t, nodeUser(node), nodeGroups...)
	dryRun := client.DryRunAll

	// Without the policy a kubelet may rewrite the synced label: RBAC lets it
	// through, so a denial later is the policy's doing.
	eventually(t, "the kubelet's RBAC to take effect", func() string {
		if err := mergePatch(ctx, kubelet, nodeRef(node), `{"metadata":{"labels":{"azure.tags/env":"evil"}}}`, dryRun); err != nil {
			return err.Error()
		}
		return ""
	})

	policy := oneOfKind(t, objs, "ValidatingAdmissionPolicy")
	binding := oneOfKind(t, objs, "ValidatingAdmissionPolicyBinding")
	if policy.GetName() != policyName || binding.GetName() != policyName {
		t.Fatalf("policy %q / binding %q, want both named %q", policy.GetName(), binding.GetName(), policyName)
	}
	apply(ctx, t, []*unstructured.Unstructured{policy, binding})
	deleteOnCleanup(t, binding, policy)
	// The policy becomes active a moment after it is stored. (Its status,
	// type-checking included, is written by kube-controller-manager, which
	// the test control plane does not run; the allowed cases below prove the
	// expressions evaluate without error, as failurePolicy Fail would deny
	// them otherwise.)
	eventually(t, "the policy to become active", func() string {
		err := mergePatch(ctx, kubelet, nodeRef(node), `{"metadata":{"labels":{"azure.tags/env":"evil"}}}`, dryRun)
		if err == nil || !strings.Contains(err.Error(), policyDenial) {
			return fmt.Sprintf("the kubelet's change is not denied by the policy yet: %v", err)
		}
		return ""
	})

	denied := []struct {
		name, patch, subresource, wantInMessage string
	}{
		{"add a synced label", `{"metadata":{"labels":{"azure.tags/owner":"mallory"}}}`, "", "labels: azure.tags/owner"},
		{"change a synced label", `{"metadata":{"labels":{"azure.tags/env":"evil"}}}`, "", "labels: azure.tags/env"},
		{"remove a synced label", `{"metadata":{"labels":{"azure.tags/env":null}}}`, "", "labels: azure.tags/env"},
		{"change a synced label through nodes/status", `{"metadata":{"labels":{"azure.tags/env":"evil"}}}`, "status", "labels: azure.tags/env"},
		{"forge the merge base", `{"metadata":{"annotations":{"` + v1alpha1.LastSyncedTagsAnnotation + `":"{}"}}}`, "", "last-synced-tags annotation"},
		{"drop the merge base", `{"metadata":{"annotations":{"` + v1alpha1.LastSyncedTagsAnnotation + `":null}}}`, "", "last-synced-tags annotation"},
	}
	for _, tc := range denied {
		t.Run("kubelet may not "+tc.name, func(t *testing.T) {
			err := patchAs(ctx, kubelet, node, tc.subresource, tc.patch)
			if err == nil {
				t.Fatalf("the kubelet's patch %s was allowed", tc.patch)
			}
			msg := err.Error()
			if !strings.Contains(msg, policyDenial) || !strings.Contains(msg, "tagsync: node identities may not") || !strings.Contains(msg, tc.wantInMessage) {
				t.Fatalf("denied, but not with the policy's message naming %q: %v", tc.wantInMessage, err)
			}
		})
	}
	if got := nodeLabels(ctx, t, node)["azure.tags/env"]; got != "prod" {
		t.Fatalf("after the denied patches azure.tags/env = %q, want prod", got)
	}

	t.Run("kubelet may not register a Node carrying synced labels", func(t *testing.T) {
		n := build.Node("vap-node-1", build.Labels(map[string]string{"azure.tags/env": "evil"}))
		err := impersonatingClient(t, nodeUser("vap-node-1"), nodeGroups...).Create(ctx, n)
		if err == nil || !strings.Contains(err.Error(), policyDenial) {
			t.Fatalf("registering a Node with a synced label: %v, want the policy's denial", err)
		}
	})

	allowed := []struct{ name, patch, subresource string }{
		{"set its other labels", `{"metadata":{"labels":{"example.com/role":"worker","kubernetes.io/hostname":"vap-node-0"}}}`, ""},
		{"set a label that only shares the prefix's first characters", `{"metadata":{"labels":{"azure.tagsx/env":"x","azure.tags.example.com/env":"x"}}}`, ""},
		{"update its status", `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"ok","lastHeartbeatTime":null,"lastTransitionTime":null}]}}`, "status"},
		{"annotate itself", `{"metadata":{"annotations":{"node.alpha.kubernetes.io/ttl":"0"}}}`, ""},
	}
	for _, tc := range allowed {
		t.Run("kubelet may still "+tc.name, func(t *testing.T) {
			if err := patchAs(ctx, kubelet, node, tc.subresource, tc.patch); err != nil {
				t.Fatalf("the kubelet's patch %s was refused: %v", tc.patch, err)
			}
		})
	}
	t.Run("kubelet may still register a Node", func(t *testing.T) {
		n := build.Node("vap-node-2", build.Labels(map[string]string{"kubernetes.io/hostname": "vap-node-2"}))
		must(t, impersonatingClient(t, nodeUser("vap-node-2"), nodeGroups...).Create(ctx, n))
	})

	t.Run("the controller may write synced labels and the merge base", func(t *testing.T) {
		sa := impersonatingClient(t, serviceAccountUser(ns, "tagsync"), serviceAccountGroups(ns)...)
		patch := `{"metadata":{"labels":{"azure.tags/env":"staging","azure.tags/team":"a"},"annotations":{"` +
			v1alpha1.LastSyncedTagsAnnotation + `":"{\"env\":\"staging\",\"team\":\"a\"}"}}}`
		eventually(t, "the controller's patch", func() string {
			if err := mergePatch(ctx, sa, nodeRef(node), patch); err != nil {
				return err.Error()
			}
			return ""
		})
		if got := nodeLabels(ctx, t, node)["azure.tags/team"]; got != "a" {
			t.Fatalf("azure.tags/team = %q after the controller's patch, want a", got)
		}
	})
	t.Run("an administrator may remove synced labels", func(t *testing.T) {
		must(t, mergePatch(ctx, kube.Client, nodeRef(node), `{"metadata":{"labels":{"azure.tags/team":null}}}`))
	})

	// labelPrefix "" maps tags to unprefixed labels; extra prefixes guard
	// other NodeTagSyncs' labels.
	t.Run("an empty labelPrefix guards unprefixed labels", func(t *testing.T) {
		other := renderChart(t, ns, "--set-string", "nodeTagSync.spec.labelPrefix=",
			"--set", "admissionPolicy.extraLabelPrefixes={tags.example.com}")
		apply(ctx, t, []*unstructured.Unstructured{oneOfKind(t, other, "ValidatingAdmissionPolicy")})
		eventually(t, "the re-configured policy to become active", func() string {
			err := mergePatch(ctx, kubelet, nodeRef(node), `{"metadata":{"labels":{"env":"evil"}}}`, dryRun)
			if err == nil || !strings.Contains(err.Error(), policyDenial) {
				return fmt.Sprintf("an unprefixed label is not denied yet: %v", err)
			}
			return ""
		})
		err := patchAs(ctx, kubelet, node, "", `{"metadata":{"labels":{"tags.example.com/env":"evil"}}}`)
		if err == nil || !strings.Contains(err.Error(), "(unprefixed labels), tags.example.com/") {
			t.Fatalf("a label under an extra prefix: %v, want the policy's denial naming both guarded prefixes", err)
		}
		if err := patchAs(ctx, kubelet, node, "", `{"metadata":{"labels":{"azure.tags/env":"now-unguarded"}}}`); err != nil {
			t.Fatalf("azure.tags is no longer guarded, yet the kubelet's patch was refused: %v", err)
		}
		t.Logf("a denial reads: %v", err)
	})
}

// grantNodesWrite lets node identities get, patch and update Nodes and their
// status through RBAC (the test server runs no Node authorizer), so requests
// reach admission.
func grantNodesWrite(ctx context.Context, t testing.TB) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-kubelet-nodes"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"nodes", "nodes/status"},
			Verbs: []string{"get", "create", "patch", "update"},
		}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-kubelet-nodes"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}},
	}
	must(t, kube.Client.Create(ctx, role))
	must(t, kube.Client.Create(ctx, binding))
	t.Cleanup(func() {
		_ = kube.Client.Delete(context.Background(), binding)
		_ = kube.Client.Delete(context.Background(), role)
	})
}

// installDefaultChart renders the chart with its defaults for chartNS,
// installs its RBAC (installRBAC) and returns it; every Node and
// NodeTagSync is deleted when the test ends.
func installDefaultChart(ctx context.Context, t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	cleanupSyncObjects(t)
	objs := renderChart(t, chartNS)
	installRBAC(ctx, t, chartNS, objs)
	return objs
}

// installRBAC creates the namespace and those of the chart's objects, and
// applies the chart's ServiceAccount, ClusterRoles, Roles and their
// bindings.
func installRBAC(ctx context.Context, t testing.TB, ns string, objs []*unstructured.Unstructured) {
	t.Helper()
	ensureNamespace(ctx, t, ns)
	ensureNamespaces(ctx, t, objs)
	var rbac []*unstructured.Unstructured
	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		rbac = append(rbac, ofKind(objs, kind)...)
	}
	apply(ctx, t, rbac)
	deleteOnCleanup(t, append(ofKind(objs, "ClusterRoleBinding"), ofKind(objs, "ClusterRole")...)...)
}

func nodeRef(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// patchAs merge-patches a Node (or its subresource) with c.
func patchAs(ctx context.Context, c client.Client, node, subresource, patch string) error {
	p := client.RawPatch("application/merge-patch+json", []byte(patch))
	if subresource != "" {
		return c.SubResource(subresource).Patch(ctx, nodeRef(node), p)
	}
	return c.Patch(ctx, nodeRef(node), p)
}

func nodeLabels(ctx context.Context, t testing.TB, name string) map[string]string {
	t.Helper()
	var n corev1.Node
	must(t, kube.Client.Get(ctx, client.ObjectKey{Name: name}, &n))
	return n.Labels
}
