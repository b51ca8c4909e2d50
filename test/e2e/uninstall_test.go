package e2e_test

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestUninstallDeletesNoTagNorLabel runs the node sync as the chart does
// (its RBAC, admission policy, NodeTagSync and Deployment arguments; two
// replicas with leader election, as the chart's ServiceAccount) until tags
// and labels agree both ways, then uninstalls it as `helm uninstall` does:
// the NodeTagSync is deleted first while the replicas still run, then the
// replicas stop, then the RBAC and the policy go. Every cloud tag and every
// label is still there afterwards: deleting an object or stopping tagsync
// deletes nothing, and a label a person changes after the deletion is not
// synced anywhere. Then `tagsync cleanup` (the binary, as an administrator)
// removes the merge bases and the pending taint of a Node registered while
// tagsync was gone, and with --labels the synced labels that still carry
// their synced value; no cloud tag changes.
func TestUninstallDeletesNoTagNorLabel(t *testing.T) {
	ctx := context.Background()
	const ns = rbacReleaseNS
	cleanupSyncObjects(t)
	objs := renderChart(t, ns, "--set", servicePrincipalSet)
	installRBAC(ctx, t, ns, objs)
	rbac := append(ofKind(objs, "RoleBinding"), ofKind(objs, "Role")...)
	deleteOnCleanup(t, rbac...)
	policy := append(ofKind(objs, "ValidatingAdmissionPolicy"), ofKind(objs, "ValidatingAdmissionPolicyBinding")...)
	apply(ctx, t, policy)
	deleteOnCleanup(t, policy...)

	cloud := armsimtest.Start(t)
	arm, sub := cloud.Server, cloud.SubscriptionID
	_, err := arm.CreateResourceGroup(sub, armsim.ResourceGroup{Name: "MC_uninstall", Location: "westeurope"})
	must(t, err)
	scaleSet, err := arm.CreateScaleSet(sub, "MC_uninstall", armsim.ScaleSet{Name: "pool", Location: "westeurope",
		Tags: map[string]string{"env": "prod", "team": "blue"}})
	must(t, err)
	instances, err := arm.AddInstances(scaleSet, 2)
	must(t, err)
	vm, err := arm.CreateVM(sub, "MC_uninstall", armsim.VirtualMachine{Name: "vm-0", Tags: map[string]string{"owner": "ops"}})
	must(t, err)
	for _, n := range []*corev1.Node{
		build.Node("pool-0", build.ProviderID("azure://"+instances[0]), build.Taints(pendingTaint())),
		build.Node("pool-1", build.ProviderID("azure://"+instances[1])),
		build.Node("vm-0", build.Labels(map[string]string{"azure.tags/from-node": "yes", "kept": "always"}), build.ProviderID("azure://"+vm)),
	} {
		must(t, kube.Client.Create(ctx, n))
	}
	apply(ctx, t, ofKind(objs, "NodeTagSync"))
	nts := oneOfKind(t, objs, "NodeTagSync").GetName()

	sa := managerServiceAccount(t, objs).GetName()
	args := append(deploymentArgs(t, objs), "--kubeconfig="+writeKubeconfig(t, serviceAccountUser(ns, sa), serviceAccountGroups(ns)...),
		"--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms")
	args = append(args, armsimFlags(t, cloud)...)
	replicas := []*tagsyncProc{startTagsync(t, "replica-a", args...), startTagsync(t, "replica-b", args...)}

	// Synced both ways: labels from the tags, a tag from a label, the
	// pending taint released.
	tagsOf := map[string]map[string]string{
		scaleSet: {"env": "prod", "team": "blue"},
		vm:       {"owner": "ops", "from-node": "yes"},
	}
	labelsOf := map[string]map[string]string{
		"pool-0": {"azure.tags/env": "prod", "azure.tags/team": "blue"},
		"pool-1": {"azure.tags/env": "prod", "azure.tags/team": "blue"},
		"vm-0":   {"azure.tags/owner": "ops", "azure.tags/from-node": "yes", "kept": "always"},
	}
	waitNodeTagSync(ctx, t, nts, "NodeTagSync "+nts+" Ready with 3 nodes", func(st v1alpha1.NodeTagSyncStatus) bool { return readyWith(st, 3) })
	waitARMTags(t, cloud, []string{vm}, tagsOf[vm])
	eventually(t, "the labels from the tags and the pending taint released", func() string {
		return uninstallDiff(ctx, t, cloud, tagsOf, labelsOf)
	})

	// helm uninstall: the NodeTagSync first, while the replicas run.
	must(t, kube.Client.Delete(ctx, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: nts}}))
	// A person changes a synced label and a tag afterwards: nothing syncs
	// them any more.
	must(t, mergePatch(ctx, kube.Client, nodeRef("pool-1"), `{"metadata":{"labels":{"azure.tags/env":"mine"}}}`))
	labelsOf["pool-1"]["azure.tags/env"] = "mine"
	must(t, arm.SetTags(scaleSet, map[string]string{"team": "red"}))
	tagsOf[scaleSet]["team"] = "red"
	// A NodeTagSync created after the deletion is served: the leader has
	// seen the deletion and the edits (its informers deliver in order). It
	// selects a Node of its own that no resource backs.
	must(t, kube.Client.Create(ctx, build.Node("canary", build.Labels(map[string]string{"canary": "yes"}))))
	must(t, kube.Client.Create(ctx, build.NodeTagSync("canary", build.NodeSelector(map[string]string{"canary": "yes"}))))
	waitNodeTagSync(ctx, t, "canary", "NodeTagSync canary served", func(st v1alpha1.NodeTagSyncStatus) bool {
		return st.ObservedGeneration > 0
	})
	must(t, kube.Client.Delete(ctx, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: "canary"}}))
	for _, p := range replicas {
		p.stop(t)
	}
	for _, o := range slices.Concat(policy, rbac, ofKind(objs, "ClusterRoleBinding"), ofKind(objs, "ClusterRole")) {
		must(t, client.IgnoreNotFound(kube.Client.Delete(ctx, o.DeepCopy())))
	}
	if diff := uninstallDiff(ctx, t, cloud, tagsOf, labelsOf); diff != "" {
		t.Fatalf("after the uninstall: %s", diff)
	}

	// A Node of the pool registers with the pending taint while tagsync is
	// gone; cleanup releases it and removes what tagsync kept on Nodes.
	must(t, kube.Client.Create(ctx, build.Node("pool-2", build.Taints(pendingTaint()))))
	admin := writeKubeconfig(t, "")
	out := runCleanup(t, "--kubeconfig="+admin)
	for _, want := range []string{"node pool-2\n  - taint " + v1alpha1.NodeTagsPendingTaintKey + ":NoSchedule\n",
		"- annotation " + v1alpha1.LastSyncedTagsAnnotation, "nothing was written"} {
		if !strings.Contains(out, want) {
			t.Errorf("cleanup's dry run lacks %q:\n%s", want, out)
		}
	}
	runCleanup(t, "--kubeconfig="+admin, "--apply", "--labels", "--label-prefix=azure.tags")
	// The labels that still carry their synced value go; pool-1's env,
	// changed by a person, and labels never synced stay.
	labelsOf = map[string]map[string]string{
		"pool-0": {},
		"pool-1": {"azure.tags/env": "mine"},
		"vm-0":   {"kept": "always"},
		"pool-2": {},
	}
	if diff := uninstallDiff(ctx, t, cloud, tagsOf, labelsOf); diff != "" {
		t.Errorf("after cleanup: %s", diff)
	}
	var nodes corev1.NodeList
	must(t, kube.Client.List(ctx, &nodes))
	for _, n := range nodes.Items {
		if _, ok := n.Annotations[v1alpha1.LastSyncedTagsAnnotation]; ok || slices.ContainsFunc(n.Spec.Taints, isPending) {
			t.Errorf("after cleanup node %s keeps annotations %v, taints %v", n.Name, n.Annotations, n.Spec.Taints)
		}
	}
}

// pendingTaint is the node sync's pending taint.
func pendingTaint() corev1.Taint {
	return build.NoSchedule(v1alpha1.NodeTagsPendingTaintKey, "true")
}

func isPending(t corev1.Taint) bool { return t.Key == v1alpha1.NodeTagsPendingTaintKey }

// uninstallDiff says how the cloud's tags (by resource) and the Nodes'
// labels (by Node, without kubernetes.io ones) differ from the expected
// ones, and whether a listed Node still carries the pending taint; "" when
// they do not.
func uninstallDiff(ctx context.Context, t testing.TB, cloud *armsimtest.Env, tagsOf, labelsOf map[string]map[string]string) string {
	t.Helper()
	for id, want := range tagsOf {
		got, err := cloud.Server.Tags(id)
		must(t, err)
		if !maps.Equal(got, want) {
			return fmt.Sprintf("%s has tags %v, want %v", id, got, want)
		}
	}
	for name, want := range labelsOf {
		var n corev1.Node
		must(t, kube.Client.Get(ctx, client.ObjectKey{Name: name}, &n))
		got := maps.Clone(n.Labels)
		maps.DeleteFunc(got, func(k, _ string) bool { return strings.Contains(k, "kubernetes.io/") })
		if !maps.Equal(got, want) {
			return fmt.Sprintf("node %s has labels %v, want %v", name, got, want)
		}
		if slices.ContainsFunc(n.Spec.Taints, isPending) && name != "pool-2" {
			return fmt.Sprintf("node %s keeps the pending taint", name)
		}
	}
	return ""
}

// runCleanup runs `tagsync cleanup args...` (the binary) and returns its
// output; it fails the test when the command fails.
func runCleanup(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(tagsyncBinary(t), append([]string{"cleanup"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tagsync cleanup %v: %v\n%s", args, err, out)
	}
	return string(out)
}
