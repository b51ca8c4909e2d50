package e2e_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// nodeSyncSubject is the node sync's part of the RBAC proof: the chart's
// admission policy and NodeTagSync, a scale set with two instances and a
// VM in armsim, and their Nodes. A full sync makes every kind of call:
// leader election, labels from tags, tags from labels, status, events and
// an event series.
type nodeSyncSubject struct {
	*rbacFixture
	scaleSet string // ARM ID of the scale set behind pool-0 and pool-1
	vm       string // ARM ID of the VM behind vm-0
	edits    int    // portal edits made so far (gives each a new value)
	requests int    // sync requests made so far
}

func newNodeSyncSubject(f *rbacFixture) rbacSubject { return &nodeSyncSubject{rbacFixture: f} }

// setup applies the chart's admission policy and NodeTagSync and seeds the
// cloud and the Nodes.
func (s *nodeSyncSubject) setup(t *testing.T) {
	cleanupSyncObjects(t)
	policy := append(ofKind(s.objs, "ValidatingAdmissionPolicy"), ofKind(s.objs, "ValidatingAdmissionPolicyBinding")...)
	apply(s.ctx, t, policy)
	deleteOnCleanup(t, policy...)
	s.seed(t)
	apply(s.ctx, t, ofKind(s.objs, "NodeTagSync"))
}

// seed creates a scale set with two instances and a VM, and their Nodes.
func (s *nodeSyncSubject) seed(t *testing.T) {
	arm, sub := s.cloud.Server, s.cloud.SubscriptionID
	_, err := arm.CreateResourceGroup(sub, armsim.ResourceGroup{Name: "MC_rbac", Location: "westeurope"})
	must(t, err)
	s.scaleSet, err = arm.CreateScaleSet(sub, "MC_rbac", armsim.ScaleSet{Name: "pool", Location: "westeurope", Tags: map[string]string{"env": "prod"}})
	must(t, err)
	instances, err := arm.AddInstances(s.scaleSet, 2)
	must(t, err)
	s.vm, err = arm.CreateVM(sub, "MC_rbac", armsim.VirtualMachine{Name: "vm-0", Tags: map[string]string{"owner": "ops"}})
	must(t, err)
	for _, n := range []*corev1.Node{
		build.Node("pool-0", build.ProviderID("azure://"+instances[0])),
		build.Node("pool-1", build.ProviderID("azure://"+instances[1])),
		build.Node("vm-0", build.Labels(map[string]string{"azure.tags/from-node": "yes"}), build.ProviderID("azure://"+s.vm)),
	} {
		must(t, kube.Client.Create(s.ctx, n))
	}
}

// fullSync: labels from tags, a tag from a label, Ready status; then portal
// edits on two resources, so one pass writes both resources' Nodes and
// reports LabelsSynced twice about the NodeTagSync (an event series, a
// PATCH); and the leader election event.
func (s *nodeSyncSubject) fullSync(t *testing.T, _ *tagsyncProc) {
	s.waitLabel(t, "pool-0", "azure.tags/env", "prod")
	s.waitLabel(t, "vm-0", "azure.tags/owner", "ops")
	waitARMTags(t, s.cloud, []string{s.vm}, map[string]string{"from-node": "yes"})
	s.waitReady(t, 3)

	s.portalEdit(t)
	s.syncNow(t)
	s.waitLabel(t, "pool-1", "azure.tags/env", s.editValue())
	s.waitLabel(t, "vm-0", "azure.tags/owner", s.editValue())
	waitEvents(s.ctx, t, "default", nodetags.ControllerName, wantEvent{regarding: "default", reason: nodetags.ReasonLabelsSynced, series: true})
	eventually(t, "the leader election event in "+s.ns, func() string {
		var list corev1.EventList
		if err := kube.Client.List(s.ctx, &list, client.InNamespace(s.ns)); err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			if e.Reason == "LeaderElection" && e.InvolvedObject.Kind == "Lease" {
				return ""
			}
		}
		return fmt.Sprintf("none among %d events", len(list.Items))
	})
}

func (s *nodeSyncSubject) checks() []rbacCheck { return nil }

// trigger says what a run without the verb must do to need it.
func (s *nodeSyncSubject) trigger(a *ablation) {
	switch {
	case a.resource == "tokenreviews" || a.resource == "subjectaccessreviews":
		// A scrape with a token: the secure metrics endpoint asks the API
		// server who sent it (tokenreviews) and whether it may get
		// /metrics (subjectaccessreviews); refused, the scrape fails.
		a.poke = scrapeRefused
	case a.resource == "leases" && a.verb == "create":
		// Only a missing Lease is created.
		a.prepare = func(t *testing.T) {
			if err := kube.Client.Delete(s.ctx, leaderLease(s.ns)); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	case a.resource == "nodes" && a.verb == "patch":
		// A portal edit must be written to the Nodes' labels.
		a.prepare = s.portalEdit
		a.also = s.waitDegraded
	case a.group == "events.k8s.io" || a.resource == "nodetagsyncs/status":
		// Labels to write on two resources' Nodes: a changed status, and
		// two LabelsSynced events about one NodeTagSync in one pass, the
		// second of which is a PATCH of the first (an event series).
		a.prepare = s.portalEdit
	}
}

// portalEdit changes the scale set's env tag and the VM's owner tag out of
// band, as a portal user.
func (s *nodeSyncSubject) portalEdit(t *testing.T) {
	t.Helper()
	s.edits++
	must(t, s.cloud.Server.SetTags(s.scaleSet, map[string]string{"env": s.editValue()}))
	must(t, s.cloud.Server.SetTags(s.vm, map[string]string{"owner": s.editValue()}))
}

// editValue is the env tag's value after the latest portal edit.
func (s *nodeSyncSubject) editValue() string {
	if s.edits == 0 {
		return "prod"
	}
	return fmt.Sprintf("edit-%d", s.edits)
}

// syncNow asks for a pass with fresh cloud reads.
func (s *nodeSyncSubject) syncNow(t testing.TB) {
	t.Helper()
	s.requests++
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"rbac-%d"}}}`, v1alpha1.SyncRequestAnnotation, s.requests)
	must(t, mergePatch(s.ctx, kube.Client, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, patch))
}

func (s *nodeSyncSubject) waitLabel(t testing.TB, node, key, value string) {
	t.Helper()
	eventually(t, fmt.Sprintf("label %s=%s on %s", key, value, node), func() string {
		if got := nodeLabels(s.ctx, t, node)[key]; got != value {
			return fmt.Sprintf("label is %q", got)
		}
		return ""
	})
}

// waitReady waits until NodeTagSync default is Ready with n synced nodes.
func (s *nodeSyncSubject) waitReady(t testing.TB, n int) {
	t.Helper()
	waitNodeTagSync(s.ctx, t, "default", "NodeTagSync default Ready", func(st v1alpha1.NodeTagSyncStatus) bool {
		return readyWith(st, n)
	})
}

// waitDegraded waits until NodeTagSync default reports sync errors.
func (s *nodeSyncSubject) waitDegraded(t *testing.T) {
	t.Helper()
	waitNodeTagSync(s.ctx, t, "default", "NodeTagSync default Degraded", func(st v1alpha1.NodeTagSyncStatus) bool {
		return meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionDegraded) && st.ErrorCount != 0
	})
}

// waitNodeTagSync waits, saying what, until NodeTagSync name's status is
// one ok accepts.
func waitNodeTagSync(ctx context.Context, t testing.TB, name, what string, ok func(v1alpha1.NodeTagSyncStatus) bool) {
	t.Helper()
	eventually(t, what, func() string {
		var nts v1alpha1.NodeTagSync
		if err := kube.Client.Get(ctx, client.ObjectKey{Name: name}, &nts); err != nil {
			return err.Error()
		}
		if !ok(nts.Status) {
			return fmt.Sprintf("status %+v", nts.Status)
		}
		return ""
	})
}

// readyWith reports whether a NodeTagSync's status is Ready with n synced
// nodes.
func readyWith(st v1alpha1.NodeTagSyncStatus, n int) bool {
	return meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady) && int(st.SyncedNodes) == n
}
