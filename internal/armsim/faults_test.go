package armsim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

func TestFaultInjection(t *testing.T) {
	env := armsimtest.Start(t)
	seedEstate(t, env.Server, env.SubscriptionID)
	s := env.Server
	s.FailNext("VirtualMachines.Get", 2, http.StatusServiceUnavailable)
	if _, err := vmClient(t, env).Get(ctx(t), rg, "flex-0", nil); err != nil {
		t.Fatalf("SDK retry should absorb two 503s: %v", err)
	}
	calls := s.Calls()
	if calls.CountStatus("VirtualMachines.Get", http.StatusServiceUnavailable) != 2 || calls.CountStatus("VirtualMachines.Get", http.StatusOK) != 1 {
		t.Errorf("calls = %+v", calls["VirtualMachines.Get"])
	}
	s.AddFault(armsim.Fault{Operation: "VirtualMachineScaleSets.Update", Count: 1, Status: http.StatusConflict, Code: "OperationNotAllowed", Message: "busy"})
	_, err := vmssClient(t, env).BeginUpdate(ctx(t), rg, "aks-nodepool1-12345678-vmss", armcompute.VirtualMachineScaleSetUpdate{}, nil)
	wantARMError(t, err, http.StatusConflict, "OperationNotAllowed")
	if len(s.Faults()) != 0 {
		t.Errorf("spent faults left: %+v", s.Faults())
	}
	c, _ := armcompute.NewVirtualMachinesClient(env.SubscriptionID, env.Credential, noRetry(env))
	s.SetErrorRate(1)
	_, err = c.Get(ctx(t), rg, "flex-0", nil)
	if err == nil {
		t.Fatal("error rate 1 let a request through")
	}
	s.SetErrorRate(0)
	s.ResetCalls()
	if _, err := c.Get(ctx(t), rg, "flex-0", nil); err != nil {
		t.Fatal(err)
	}
	if got := s.Calls().Ops(); !reflect.DeepEqual(got, []string{"VirtualMachines.Get"}) {
		t.Errorf("after reset: %v", got)
	}
}

func TestFaultScope(t *testing.T) {
	env := armsimtest.Start(t)
	seedEstate(t, env.Server, env.SubscriptionID)
	s := env.Server
	const other = "MC_other"
	if _, err := s.CreateVM(env.SubscriptionID, other, armsim.VirtualMachine{Name: "vm"}); err != nil {
		t.Fatal(err)
	}
	c, _ := armcompute.NewVirtualMachinesClient(env.SubscriptionID, env.Credential, noRetry(env))
	// Scope in another casing, with a trailing slash: still the group.
	s.AddFault(armsim.Fault{Operation: "VirtualMachines.Get", Status: http.StatusForbidden, Code: "AuthorizationFailed",
		Scope: "/SUBSCRIPTIONS/" + env.SubscriptionID + "/resourcegroups/" + strings.ToUpper(rg) + "/"})
	for range 2 {
		_, err := c.Get(ctx(t), rg, "flex-0", nil)
		wantARMError(t, err, http.StatusForbidden, "AuthorizationFailed")
	}
	if _, err := c.Get(ctx(t), other, "vm", nil); err != nil {
		t.Errorf("a fault scoped to %s failed a request in %s: %v", rg, other, err)
	}
	// A group whose name extends the scope's is not under it.
	s.ClearFaults()
	s.AddFault(armsim.Fault{Status: http.StatusForbidden, Scope: "/subscriptions/" + env.SubscriptionID + "/resourceGroups/MC_oth"})
	if _, err := c.Get(ctx(t), other, "vm", nil); err != nil {
		t.Errorf("scope /resourceGroups/MC_oth matched MC_other: %v", err)
	}
}

func adminDo(t *testing.T, env *armsimtest.Env, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), method, env.Server.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := env.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func TestAdminAPI(t *testing.T) {
	env := armsimtest.Start(t)
	e := seedEstate(t, env.Server, env.SubscriptionID)
	if st, body := adminDo(t, env, http.MethodPost, "/_admin/tags", `{"id":"`+e.uniform+`","set":{"portal":"yes"}}`); st != 200 || !strings.Contains(body, `"portal":"yes"`) {
		t.Fatalf("set tags: %d %s", st, body)
	}
	if st, _ := adminDo(t, env, http.MethodPost, "/_admin/tags", `{"id":"`+e.uniform+`","replace":{"only":"1"}}`); st != 200 {
		t.Fatal(st)
	}
	if tags, _ := env.Server.Tags(e.uniform); !reflect.DeepEqual(tags, map[string]string{"only": "1"}) {
		t.Errorf("replace via admin = %v", tags)
	}
	if st, _ := adminDo(t, env, http.MethodPost, "/_admin/faults", `{"operation":"VirtualMachines.Get","count":1,"status":500}`); st != 204 {
		t.Fatal(st)
	}
	c, _ := armcompute.NewVirtualMachinesClient(env.SubscriptionID, env.Credential, noRetry(env))
	_, err := c.Get(ctx(t), rg, "flex-0", nil)
	wantARMError(t, err, http.StatusInternalServerError, "InternalServerError")
	st, body := adminDo(t, env, http.MethodGet, "/_admin/calls", "")
	var calls armsim.Calls
	if err := json.Unmarshal([]byte(body), &calls); err != nil || st != 200 || calls.CountStatus("VirtualMachines.Get", 500) != 1 {
		t.Errorf("calls: %d %s %v", st, body, err)
	}
	_, state := adminDo(t, env, http.MethodGet, "/_admin/state", "")
	if st, _ := adminDo(t, env, http.MethodPost, "/_admin/reset", ""); st != 204 || env.Server.ResourceCount() != 0 {
		t.Fatalf("reset: %d, %d resources", st, env.Server.ResourceCount())
	}
	if st, body := adminDo(t, env, http.MethodPut, "/_admin/state", state); st != 204 {
		t.Fatalf("load: %d %s", st, body)
	}
	if tags, _ := env.Server.Tags(e.uniform); !reflect.DeepEqual(tags, map[string]string{"only": "1"}) {
		t.Errorf("state round trip lost tags: %v", tags)
	}
	if st, _ := adminDo(t, env, http.MethodPut, "/_admin/config", `{"throttle":{"reads":{"capacity":1,"refillPerSecond":0.001}}}`); st != 204 {
		t.Fatal(st)
	}
	_, _ = c.Get(ctx(t), rg, "flex-0", nil)
	_, err = c.Get(ctx(t), rg, "flex-0", nil)
	wantARMError(t, err, http.StatusTooManyRequests, "SubscriptionRequestsThrottled")
	if st, _ := adminDo(t, env, http.MethodPost, "/_admin/instances", `{"scaleSetId":"`+e.uniform+`","count":1}`); st != 200 {
		t.Fatal(st)
	}
	if st, _ := adminDo(t, env, http.MethodDelete, "/_admin/resources?id="+e.nic, ""); st != 204 || env.Server.Exists(e.nic) {
		t.Errorf("delete: %d", st)
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	a, err := armsim.New(armsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seedEstate(t, a, "sub-a")
	if err := a.SetTags("/subscriptions/sub-a", map[string]string{"costcenter": "42"}); err != nil {
		t.Fatal(err)
	}
	data, err := a.SaveYAML()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := armsim.New(armsim.Options{})
	if err := b.LoadYAML(data); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	again, _ := b.SaveYAML()
	if !bytes.Equal(data, again) {
		t.Errorf("round trip differs:\n%s\n---\n%s", data, again)
	}
	if err := b.LoadYAML([]byte("subscriptions:\n- id: x\n  bogus: 1\n")); err == nil {
		t.Error("unknown field accepted")
	}
	seed := `
subscriptions:
- id: 00000000-0000-0000-0000-000000000009
  resourceGroups:
  - name: rg1
    scaleSets:
    - name: pool
      instances: ["0", "1"]
      tags: {env: prod}
    virtualMachines:
    - name: vm1
      availabilitySet: as1
`
	if err := b.LoadYAML([]byte(seed)); err != nil {
		t.Fatal(err)
	}
	if n := b.ResourceCount(); n != 3 {
		t.Errorf("seeded %d resources, want 3 (scale set, VM, availability set)", n)
	}
}
