package armsim_test

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v4"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/tags/tagstest"
)

// tagOps wraps the Tags API LROs.
type tagOps struct {
	t *testing.T
	c *armresources.TagsClient
}

func (o tagOps) get(scope string) map[string]string {
	o.t.Helper()
	r, err := o.c.GetAtScope(ctx(o.t), scope, nil)
	if err != nil {
		o.t.Fatal(err)
	}
	return deref(r.Properties.Tags)
}

func (o tagOps) put(scope string, tags map[string]string) error {
	p, err := o.c.BeginCreateOrUpdateAtScope(ctx(o.t), scope, armresources.TagsResource{Properties: &armresources.Tags{Tags: ptrMap(tags)}}, nil)
	if err != nil {
		return err
	}
	_, err = p.PollUntilDone(ctx(o.t), fastPoll)
	return err
}

func (o tagOps) patch(scope string, op armresources.TagsPatchOperation, tags map[string]string) (map[string]string, error) {
	p, err := o.c.BeginUpdateAtScope(ctx(o.t), scope, armresources.TagsPatchResource{Operation: &op, Properties: &armresources.Tags{Tags: ptrMap(tags)}}, nil)
	if err != nil {
		return nil, err
	}
	r, err := p.PollUntilDone(ctx(o.t), fastPoll)
	if err != nil {
		return nil, err
	}
	return deref(r.Properties.Tags), nil
}

func (o tagOps) del(scope string) error {
	p, err := o.c.BeginDeleteAtScope(ctx(o.t), scope, nil)
	if err != nil {
		return err
	}
	_, err = p.PollUntilDone(ctx(o.t), fastPoll)
	return err
}

func TestTagsAPI(t *testing.T) {
	for _, polls := range []int{0, 2} {
		t.Run(fmt.Sprintf("polls=%d", polls), func(t *testing.T) {
			t.Parallel()
			transportsTagsAPI(t, polls)
		})
	}
}

func transportsTagsAPI(t *testing.T, polls int) {
	transports(t, func(t *testing.T, env *armsimtest.Env) {
		e := seedEstate(t, env.Server, env.SubscriptionID)
		ops := tagOps{t, tagsClient(t, env)}
		sub := "/subscriptions/" + env.SubscriptionID
		for _, scope := range []string{sub, sub + "/resourceGroups/" + rg, e.standalone, e.uniform, e.nic, strings.ToUpper(e.dns)} {
			checkTagLifecycle(t, ops, env, scope)
		}
		// A Uniform instance has no tags, and writes do not stick.
		if err := ops.put(e.instances[0], map[string]string{"a": "b"}); err != nil {
			t.Fatal(err)
		}
		if got := ops.get(e.instances[0]); len(got) != 0 {
			t.Errorf("instance tags = %v", got)
		}
		if err := ops.put(sub+"/resourceGroups/"+rg+"/providers/Microsoft.Compute/virtualMachines/missing", nil); err == nil {
			t.Error("PUT on a missing resource succeeded")
		} else {
			wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")
		}
	}, armsimtest.WithLROPolls(polls))
}

// checkTagLifecycle runs PUT, Merge (case-insensitive), Delete, Replace
// and DELETE at scope.
func checkTagLifecycle(t *testing.T, ops tagOps, env *armsimtest.Env, scope string) {
	t.Helper()
	if err := ops.put(scope, map[string]string{"env": "prod", "team": "a", "keep": "1"}); err != nil {
		t.Fatalf("%s: put: %v", scope, err)
	}
	got, err := ops.patch(scope, armresources.TagsPatchOperationMerge, map[string]string{"Env": "dev", "new": "n"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"env": "dev", "team": "a", "keep": "1", "new": "n"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: merge = %v, want %v", scope, got, want)
	}
	got, err = ops.patch(scope, armresources.TagsPatchOperationDelete, map[string]string{"TEAM": "other", "new": "n", "keep": ""})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"env": "dev", "team": "a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("%s: delete = %v, want %v (value must match to delete)", scope, got, want)
	}
	if got, err = ops.patch(scope, armresources.TagsPatchOperationReplace, map[string]string{"only": "this"}); err != nil || !reflect.DeepEqual(got, map[string]string{"only": "this"}) {
		t.Errorf("%s: replace = %v, %v", scope, got, err)
	}
	if server, _ := env.Server.Tags(scope); !reflect.DeepEqual(server, map[string]string{"only": "this"}) {
		t.Errorf("%s: server state = %v", scope, server)
	}
	if err := ops.del(scope); err != nil {
		t.Fatal(err)
	}
	if got := ops.get(scope); len(got) != 0 {
		t.Errorf("%s: after DELETE tags = %v", scope, got)
	}
}

func TestTagRules(t *testing.T) {
	env := armsimtest.Start(t)
	e := seedEstate(t, env.Server, env.SubscriptionID)
	ops := tagOps{t, tagsClient(t, env)}
	many := func(n int) map[string]string { return tagstest.Numbered("k", n) }
	cases := []struct {
		name  string
		scope string
		tags  map[string]string
		code  string
	}{
		{"51 tags", e.nic, many(51), "TooManyTags"},
		{"16 tags on a DNS zone", e.dns, many(16), "TooManyTags"},
		{"name of 513", e.nic, map[string]string{strings.Repeat("n", 513): "v"}, "InvalidTagNameLength"},
		{"name of 129 on a storage account", e.storage, map[string]string{strings.Repeat("n", 129): "v"}, "InvalidTagNameLength"},
		{"value of 257", e.nic, map[string]string{"k": strings.Repeat("v", 257)}, "InvalidTagValueLength"},
		{"reserved microsoft", e.nic, map[string]string{"microsoftFoo": "v"}, "InvalidTagName"},
		{"reserved Azure", e.nic, map[string]string{"AzureBar": "v"}, "InvalidTagName"},
		{"reserved windows", e.nic, map[string]string{"windows": "v"}, "InvalidTagName"},
		{"empty name", e.nic, map[string]string{"": "v"}, "InvalidTagName"},
		{"names differing in case", e.nic, map[string]string{"Env": "a", "env": "b"}, "InvalidTagName"},
		{"a space on a DNS zone", e.dns, map[string]string{"cost center": "v"}, "InvalidTagNameCharacters"},
		{"parentheses on a DNS zone", e.dns, map[string]string{"team(a)": "v"}, "InvalidTagNameCharacters"},
		{"a leading digit on a DNS zone", e.dns, map[string]string{"1team": "v"}, "InvalidTagNameCharacters"},
	}
	for _, ch := range `<>%&\?/` {
		cases = append(cases, struct {
			name, scope string
			tags        map[string]string
			code        string
		}{"char " + string(ch), e.nic, map[string]string{"a" + string(ch) + "b": "v"}, "InvalidTagNameCharacters"})
	}
	for _, tc := range cases {
		_, err := ops.patch(tc.scope, armresources.TagsPatchOperationMerge, tc.tags)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		wantARMError(t, err, http.StatusBadRequest, tc.code)
	}
	// Limits are inclusive; the storage name limit is 128.
	if err := ops.put(e.nic, many(50)); err != nil {
		t.Errorf("50 tags rejected: %v", err)
	}
	if err := ops.put(e.storage, map[string]string{strings.Repeat("n", 128): strings.Repeat("v", 256)}); err != nil {
		t.Errorf("128/256 rejected: %v", err)
	}
	if err := ops.put(e.lb, map[string]string{strings.Repeat("n", 512): "v"}); err != nil {
		t.Errorf("512 rejected: %v", err)
	}
	// Other types take what DNS zones refuse; Traffic Manager and Front Door
	// refuse '#' and ':'.
	if err := ops.put(e.nic, map[string]string{"cost center": "v", "1team": "v", "team(a)": "v", "a#b:c": "v"}); err != nil {
		t.Errorf("a NIC refused DNS zones' names: %v", err)
	}
	for _, typ := range []string{"Microsoft.Network/trafficManagerProfiles", "Microsoft.Network/frontDoors"} {
		id, err := env.Server.CreateResource(env.SubscriptionID, rg, armsim.Resource{Type: typ, Name: "x" + strings.ReplaceAll(typ, "/", "-")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = ops.patch(id, armresources.TagsPatchOperationMerge, map[string]string{"a#b": "v"})
		wantARMError(t, err, http.StatusBadRequest, "InvalidTagNameCharacters")
		if err := ops.put(id, map[string]string{"team(a)": "v"}); err != nil {
			t.Errorf("%s refused parentheses: %v", typ, err)
		}
	}
	// The same rules guard compute PATCH.
	p, err := vmClient(t, env).BeginUpdate(ctx(t), rg, "standalone-vm", armcompute.VirtualMachineUpdate{Tags: ptrMap(map[string]string{"a/b": "c"})}, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx(t), fastPoll)
	}
	wantARMError(t, err, http.StatusBadRequest, "InvalidTagNameCharacters")
	if tags, _ := env.Server.Tags(e.standalone); !reflect.DeepEqual(tags, map[string]string{"role": "db"}) {
		t.Errorf("rejected write changed tags: %v", tags)
	}
}

func TestOutOfBandEdits(t *testing.T) {
	env := armsimtest.Start(t)
	e := seedEstate(t, env.Server, env.SubscriptionID)
	s := env.Server
	before, _ := s.ETag(e.uniform)
	if err := s.SetTags(e.uniform, map[string]string{"ENV": "staging", "owner": "me"}); err != nil {
		t.Fatal(err)
	}
	tags, _ := s.Tags(e.uniform)
	if !reflect.DeepEqual(tags, map[string]string{"env": "staging", "team": "a", "owner": "me"}) {
		t.Errorf("portal edit = %v", tags)
	}
	if after, _ := s.ETag(e.uniform); after == before {
		t.Error("portal edit kept the ETag")
	}
	if err := s.ReplaceTags(e.uniform, map[string]string{"aks-managed-poolName": "nodepool1"}); err != nil {
		t.Fatal(err)
	}
	if tags, _ := s.Tags(e.uniform); !reflect.DeepEqual(tags, map[string]string{"aks-managed-poolName": "nodepool1"}) {
		t.Errorf("reconcile = %v", tags)
	}
	if err := s.DeleteTags(e.uniform, "AKS-MANAGED-POOLNAME"); err != nil {
		t.Fatal(err)
	}
	if tags, _ := s.Tags(e.uniform); len(tags) != 0 {
		t.Errorf("after delete = %v", tags)
	}
	if err := s.SetTags(e.instances[0], map[string]string{"a": "b"}); err == nil {
		t.Error("tagging a Uniform instance out of band succeeded")
	}
	if err := s.SetTags(e.nic, map[string]string{"azure-x": "b"}); err == nil {
		t.Error("reserved prefix accepted out of band")
	}
	if s.Calls().Count("Tags.UpdateAtScope") != 0 {
		t.Error("out-of-band edits were counted as calls")
	}
	ids, err := s.AddInstances(e.uniform, 2)
	if err != nil || len(ids) != 2 || !strings.HasSuffix(ids[1], "/virtualMachines/4") {
		t.Fatalf("AddInstances = %v, %v", ids, err)
	}
	if err := s.DeleteResource(ids[0]); err != nil || s.Exists(ids[0]) {
		t.Errorf("delete instance: %v", err)
	}
}
