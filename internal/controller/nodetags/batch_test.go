package nodetags_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestIdenticalInstanceWritesCoalesce: on AWS under target Instance, 20
// standalone instances that need the identical patch (their nodes' taint
// exported once syncTaints is turned on) are tagged with one CreateTags,
// and the audit still has a pending and a result record per instance.
func TestIdenticalInstanceWritesCoalesce(t *testing.T) {
	const n = 20
	h, c, provider := newCountedMotoHarness(t)
	o := &onCloud{harness: h, cloud: c, provider: v1alpha1.ProviderAWS, name: "coalesce"}
	taint := corev1.Taint{Key: "example.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	instances := awstest.RunInstances(t, c.m, n, map[string]string{"env": "prod"})
	nodes := make([]string, n)
	for i, id := range instances {
		nodes[i] = o.node(i, seed.ProviderID(testenv.MotoRegion, id), nil, nil, taint)
	}
	o.sync(func(s *v1alpha1.NodeTagSyncSpec) { s.Target = v1alpha1.TargetInstance })
	o.waitLabels(nodes, map[string]string{"env": "prod"})
	o.passDone(o.name, n)
	before := provider().Calls()

	// One pass (the new generation's) sees every node and proposes the
	// same tag for each instance.
	setSyncTaints(o)
	const tag = "taint:example.com:gpu"
	for _, id := range instances {
		o.waitTag(instanceARN(id), tag, "true:NoSchedule")
	}
	after := provider().Calls()
	if got := after["ec2:CreateTags"] - before["ec2:CreateTags"]; got != 1 {
		t.Errorf("%d CreateTags calls for %d instances with the identical patch, want 1 (calls before %v, after %v)", got, n, before, after)
	}
	if got := after["ec2:DeleteTags"] - before["ec2:DeleteTags"]; got != 0 {
		t.Errorf("%d DeleteTags calls, want none", got)
	}

	records := map[string][]string{}
	for _, r := range h.auditRecords() {
		if _, ok := r.Set[tag]; ok && r.Object.Name == o.name {
			records[r.Resource] = append(records[r.Resource], r.Result)
		}
	}
	for _, id := range instances {
		got := records[instanceARN(id)]
		if len(got) != 2 || got[0] != audit.ResultPending || got[1] != audit.ResultOK {
			t.Errorf("audit records of %s = %q, want pending then ok", id, got)
		}
	}
	if len(records) != n {
		t.Errorf("audit names %d resources, want %d", len(records), n)
	}
}

// setSyncTaints turns on the case's NodeTagSync's syncTaints.
func setSyncTaints(o *onCloud) {
	o.t.Helper()
	nts := &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: o.name}}
	if err := o.c.Patch(o.ctx, nts, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"syncTaints":true}}`))); err != nil {
		o.t.Fatal(err)
	}
}
