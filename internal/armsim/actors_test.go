package armsim_test

import (
	"maps"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v4"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

// TestPolicyEffects: a modify policy sets its tag on every write under its
// scope, whatever the write said, and the write's answer shows it; an
// append policy adds a missing tag and keeps a value the write sets;
// writes outside the scope and out-of-band edits are left alone.
func TestPolicyEffects(t *testing.T) {
	env := armsimtest.Start(t)
	e := seedEstate(t, env.Server, env.SubscriptionID)
	if err := env.Server.AddPolicy(armsim.Policy{Name: "cost", Scope: e.nic, Effect: armsim.PolicyModify,
		Tags: map[string]string{"costcenter": "platform"}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Server.AddPolicy(armsim.Policy{Name: "env", Scope: groupScope(env), Effect: armsim.PolicyAppend,
		Tags: map[string]string{"env": "prod"}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Server.AddPolicy(armsim.Policy{Name: "bad", Scope: e.nic, Effect: "Deny"}); err == nil {
		t.Error("a Deny policy was accepted")
	}
	ops := tagOps{t, tagsClient(t, env)}
	res, err := ops.patch(e.nic, armresources.TagsPatchOperationMerge, map[string]string{"costcenter": "team-a", "env": "dev"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kubernetes.io_cluster.aks": "owned", "costcenter": "platform", "env": "dev"}
	if got := res; !maps.Equal(got, want) {
		t.Errorf("the answer carries %v, want %v", got, want)
	}
	if got, _ := env.Server.Tags(e.nic); !maps.Equal(got, want) {
		t.Errorf("stored %v, want %v", got, want)
	}
	if err := ops.put(e.lb, map[string]string{"a": "1"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := env.Server.Tags(e.lb); !maps.Equal(got, map[string]string{"a": "1", "env": "prod"}) {
		t.Errorf("append: %v", got)
	}
	if err := env.Server.SetTags(e.nic, map[string]string{"costcenter": "by-hand"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := env.Server.Tags(e.nic); got["costcenter"] != "by-hand" {
		t.Errorf("an out-of-band edit went through the policy: %v", got)
	}
	env.Server.RemoveActor("cost")
	if _, err := ops.patch(e.nic, armresources.TagsPatchOperationMerge, map[string]string{"costcenter": "team-a"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := env.Server.Tags(e.nic); got["costcenter"] != "team-a" {
		t.Errorf("a removed policy still applies: %v", got)
	}
}

// TestReconciler: after another writer's write of a scale set, the
// reconciler rewrites its tags to its declared set, before the write's
// answer leaves, and its event names its application after the writer's.
func TestReconciler(t *testing.T) {
	env, e := eventGridEnv(t)
	rc := startReceiver(t)
	env.Subscribe(t, "all", onlyUnder(armsimtest.WebHook(rc.srv.URL), groupScope(env)))
	const aks = "7319c514-987d-4e9b-ac3d-d38c4f427f4c"
	declared := map[string]string{"env": "prod", "team": "a"}
	if err := env.Server.AddReconciler(armsim.Reconciler{Name: "aks", Scope: e.uniform, Tags: declared, AppID: aks}); err != nil {
		t.Fatal(err)
	}
	p, err := vmssClient(t, env).BeginUpdate(ctx(t), rg, "aks-nodepool1-12345678-vmss",
		armcompute.VirtualMachineScaleSetUpdate{Tags: ptrMap(map[string]string{"env": "prod", "team": "a", "copied": "x"})}, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx(t), fastPoll)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := env.Server.Tags(e.uniform); !maps.Equal(got, declared) {
		t.Errorf("after the reconcile: %v, want %v", got, declared)
	}
	evs := waitEvents(t, rc, 2)
	claims := func(ev event) map[string]any {
		c, _ := ev["data"].(map[string]any)["claims"].(map[string]any)
		return c
	}
	if claims(evs[0])["appid"] != armsimtest.ClientID || claims(evs[1])["appid"] != aks || claims(evs[1])["idtyp"] != "app" ||
		evs[1].data("operationName") != armsim.TypeScaleSet+"/write" || evs[1].str("subject") != e.uniform {
		t.Errorf("events %v", evs)
	}
	// Its own rewrite does not start another; out of its scope nothing runs.
	ops := tagOps{t, tagsClient(t, env)}
	if _, err := ops.patch(e.nic, armresources.TagsPatchOperationMerge, map[string]string{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	if got := waitEvents(t, rc, 3); len(got) != 3 {
		t.Errorf("%d events, want 3", len(got))
	}
}
