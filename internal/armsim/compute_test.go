package armsim_test

import (
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"

	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

func TestVirtualMachinesGetAndList(t *testing.T) {
	transports(t, func(t *testing.T, env *armsimtest.Env) {
		e := seedEstate(t, env.Server, env.SubscriptionID)
		c := vmClient(t, env)
		vm, err := c.Get(ctx(t), strings.ToUpper(rg), "FLEX-0", nil)
		if err != nil {
			t.Fatal(err)
		}
		if *vm.ID != e.flexVM0 || *vm.Name != "flex-0" {
			t.Errorf("ID/name keep creation casing: got %s %s", *vm.ID, *vm.Name)
		}
		if vm.Properties.VirtualMachineScaleSet == nil || *vm.Properties.VirtualMachineScaleSet.ID != e.flex {
			t.Errorf("flex member has no virtualMachineScaleSet.id: %+v", vm.Properties)
		}
		if got := deref(vm.Tags); !reflect.DeepEqual(got, map[string]string{"pool": "flex"}) {
			t.Errorf("tags = %v", got)
		}
		if vm.Etag == nil || *vm.Etag != `"1"` {
			t.Errorf("etag = %v", vm.Etag)
		}
		as, err := c.Get(ctx(t), rg, "as-vm", nil)
		if err != nil || as.Properties.AvailabilitySet == nil || !strings.EqualFold(*as.Properties.AvailabilitySet.ID, e.avset) {
			t.Fatalf("availability set VM: %v %+v", err, as.Properties)
		}
		names := listVMNames(t, c, nil)
		want := []string{"as-vm", "flex-0", "flex-1", "standalone-vm"}
		if !reflect.DeepEqual(names, want) {
			t.Errorf("list = %v, want %v", names, want)
		}
		filter := "'virtualMachineScaleSet/id' eq '" + strings.ToLower(e.flex) + "'"
		if got := listVMNames(t, c, &filter); !reflect.DeepEqual(got, []string{"flex-0", "flex-1"}) {
			t.Errorf("filtered list = %v", got)
		}
		all := 0
		for p := c.NewListAllPager(nil); p.More(); {
			page, err := p.NextPage(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			all += len(page.Value)
		}
		if all != 4 {
			t.Errorf("list all = %d VMs, want 4", all)
		}
		if n := env.Server.Calls().CountStatus("VirtualMachines.List", http.StatusOK); n < 3 {
			t.Errorf("page size 2 should need several pages, got %d list calls", n)
		}
	}, armsimtest.WithPageSize(2))
}

func listVMNames(t *testing.T, c *armcompute.VirtualMachinesClient, filter *string) []string {
	t.Helper()
	var names []string
	for p := c.NewListPager(rg, &armcompute.VirtualMachinesClientListOptions{Filter: filter}); p.More(); {
		page, err := p.NextPage(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, vm := range page.Value {
			names = append(names, *vm.Name)
		}
	}
	sort.Strings(names)
	return names
}

func TestScaleSetsAndInstances(t *testing.T) {
	transports(t, func(t *testing.T, env *armsimtest.Env) {
		e := seedEstate(t, env.Server, env.SubscriptionID)
		ss := vmssClient(t, env)
		got, err := ss.Get(ctx(t), rg, "aks-nodepool1-12345678-vmss", nil)
		if err != nil {
			t.Fatal(err)
		}
		if *got.Properties.OrchestrationMode != armcompute.OrchestrationModeUniform || *got.SKU.Capacity != 3 {
			t.Errorf("uniform set: %+v sku %+v", got.Properties, got.SKU)
		}
		var sets []string
		for p := ss.NewListPager(rg, nil); p.More(); {
			page, err := p.NextPage(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range page.Value {
				sets = append(sets, *v.Name+"/"+string(*v.Properties.OrchestrationMode))
			}
		}
		if !reflect.DeepEqual(sets, []string{"aks-flex-vmss/Flexible", "aks-nodepool1-12345678-vmss/Uniform"}) {
			t.Errorf("scale sets = %v", sets)
		}
		vms := vmssVMClient(t, env)
		var ids []string
		for p := vms.NewListPager(rg, "aks-nodepool1-12345678-vmss", nil); p.More(); {
			page, err := p.NextPage(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range page.Value {
				ids = append(ids, *v.ID)
			}
		}
		if !reflect.DeepEqual(ids, e.instances) {
			t.Errorf("instances = %v, want %v", ids, e.instances)
		}
		_, err = vms.NewListPager(rg, "aks-flex-vmss", nil).NextPage(ctx(t))
		wantARMError(t, err, http.StatusBadRequest, "OperationNotAllowed")
	}, armsimtest.WithPageSize(2))
}

func TestUniformInstanceUpdateKeepsNoTags(t *testing.T) {
	env := armsimtest.Start(t, armsimtest.WithLROPolls(2))
	seedEstate(t, env.Server, env.SubscriptionID)
	c := vmssVMClient(t, env)
	inst, err := c.Get(ctx(t), rg, "aks-nodepool1-12345678-vmss", "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(inst.Tags) != 0 || *inst.Name != "aks-nodepool1-12345678-vmss_1" {
		t.Fatalf("instance: tags %v name %s", inst.Tags, *inst.Name)
	}
	inst.Tags = ptrMap(map[string]string{"mine": "x"})
	poller, err := c.BeginUpdate(ctx(t), rg, "aks-nodepool1-12345678-vmss", "1", inst.VirtualMachineScaleSetVM, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := poller.PollUntilDone(ctx(t), fastPoll)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tags) != 0 {
		t.Errorf("uniform instance kept tags %v", res.Tags)
	}
	tags, _ := env.Server.Tags(*inst.ID)
	if len(tags) != 0 {
		t.Errorf("server state has instance tags %v", tags)
	}
}

func TestComputeUpdateLRO(t *testing.T) {
	for _, polls := range []int{0, 3} {
		t.Run(map[int]string{0: "at-once", 3: "three-polls"}[polls], func(t *testing.T) {
			t.Parallel()
			env := armsimtest.Start(t, armsimtest.WithLROPolls(polls))
			e := seedEstate(t, env.Server, env.SubscriptionID)
			ss := vmssClient(t, env)
			poller, err := ss.BeginUpdate(ctx(t), rg, "aks-nodepool1-12345678-vmss",
				armcompute.VirtualMachineScaleSetUpdate{Tags: ptrMap(map[string]string{"env": "dev", "new": "1"})}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if polls > 0 && poller.Done() {
				t.Fatal("poller done before polling")
			}
			res, err := poller.PollUntilDone(ctx(t), fastPoll)
			if err != nil {
				t.Fatal(err)
			}
			if got := deref(res.Tags); !reflect.DeepEqual(got, map[string]string{"env": "dev", "new": "1"}) {
				t.Errorf("tags = %v", got)
			}
			if *res.Etag != `"2"` || *res.Properties.ProvisioningState != "Succeeded" {
				t.Errorf("etag %s state %s", *res.Etag, *res.Properties.ProvisioningState)
			}
			if n := env.Server.Calls().Count("Operations.Status"); n != polls {
				t.Errorf("status polls = %d, want %d", n, polls)
			}
			vm, err := vmClient(t, env).BeginUpdate(ctx(t), rg, "standalone-vm",
				armcompute.VirtualMachineUpdate{Tags: ptrMap(map[string]string{"role": "web"})}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := vm.PollUntilDone(ctx(t), fastPoll); err != nil {
				t.Fatal(err)
			}
			if tags, _ := env.Server.Tags(e.standalone); tags["role"] != "web" {
				t.Errorf("VM tags = %v", tags)
			}
		})
	}
}

func TestComputeUpdatePreconditions(t *testing.T) {
	env := armsimtest.Start(t)
	e := seedEstate(t, env.Server, env.SubscriptionID)
	c := vmClient(t, env)
	vm, err := c.Get(ctx(t), rg, "flex-0", nil)
	if err != nil {
		t.Fatal(err)
	}
	stale := *vm.Etag
	if err := env.Server.SetTags(e.flexVM0, map[string]string{"portal": "edit"}); err != nil {
		t.Fatal(err)
	}
	upd := armcompute.VirtualMachineUpdate{Tags: ptrMap(map[string]string{"pool": "flex", "x": "y"})}
	_, err = c.BeginUpdate(ctx(t), rg, "flex-0", upd, &armcompute.VirtualMachinesClientBeginUpdateOptions{IfMatch: &stale})
	wantARMError(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
	fresh, _ := env.Server.ETag(e.flexVM0)
	p, err := c.BeginUpdate(ctx(t), rg, "flex-0", upd, &armcompute.VirtualMachinesClientBeginUpdateOptions{IfMatch: &fresh})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.PollUntilDone(ctx(t), fastPoll)
	if err != nil {
		t.Fatal(err)
	}
	if *res.Etag == fresh || *res.Etag == stale {
		t.Errorf("write did not change the ETag: %s", *res.Etag)
	}
	_, err = c.BeginUpdate(ctx(t), rg, "flex-0", upd, &armcompute.VirtualMachinesClientBeginUpdateOptions{IfNoneMatch: ptr("*")})
	wantARMError(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
}

func TestNotFoundAndBadRequests(t *testing.T) {
	env := armsimtest.Start(t)
	seedEstate(t, env.Server, env.SubscriptionID)
	c := vmClient(t, env)
	_, err := c.Get(ctx(t), rg, "nope", nil)
	wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")
	_, err = c.Get(ctx(t), "no-such-rg", "nope", nil)
	wantARMError(t, err, http.StatusNotFound, "ResourceGroupNotFound")
	_, err = c.NewListPager("no-such-rg", nil).NextPage(ctx(t))
	wantARMError(t, err, http.StatusNotFound, "ResourceGroupNotFound")
	bad := "name eq 'x'"
	_, err = c.NewListPager(rg, &armcompute.VirtualMachinesClientListOptions{Filter: &bad}).NextPage(ctx(t))
	wantARMError(t, err, http.StatusBadRequest, "InvalidFilterInQueryString")
	path := "/subscriptions/" + env.SubscriptionID + "/resourceGroups/" + rg +
		"/providers/Microsoft.Compute/virtualMachines/flex-0?api-version=2026-04-01"
	resp := rawRequest(t, env, http.MethodPatch, path, []byte(`{"tags":`))
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad JSON: status %d", resp.StatusCode)
	}
	resp = rawRequest(t, env, http.MethodPatch, path, []byte(`{"tags":{"a":1}}`))
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("non-string tag value: status %d", resp.StatusCode)
	}
	resp = rawRequest(t, env, http.MethodGet, strings.TrimSuffix(path, "?api-version=2026-04-01"), nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("missing api-version: status %d", resp.StatusCode)
	}
}
