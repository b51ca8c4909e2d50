package armsim_test

import (
	"net/http"
	"reflect"
	"sort"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v4"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

func TestResourcesList(t *testing.T) {
	transports(t, func(t *testing.T, env *armsimtest.Env) {
		e := seedEstate(t, env.Server, env.SubscriptionID)
		if _, err := env.Server.CreateResource(env.SubscriptionID, "other-rg", armsimResource("Microsoft.Network/networkInterfaces", "nic-x", map[string]string{"kubernetes.io_cluster.aks": "shared"})); err != nil {
			t.Fatal(err)
		}
		c := resourcesClient(t, env)
		all := listResources(t, c.NewListPager(nil))
		if len(all) != 14 {
			t.Errorf("subscription has %d resources, want 14: %v", len(all), all)
		}
		owned := listResources(t, c.NewListPager(&armresources.ClientListOptions{Filter: ptr("tagName eq 'KUBERNETES.IO_CLUSTER.AKS' and tagValue eq 'owned'")}))
		want := []string{e.disk, e.dns, e.lb, e.nic, e.pip, e.storage}
		sort.Strings(want)
		if !reflect.DeepEqual(owned, want) {
			t.Errorf("owned = %v, want %v", owned, want)
		}
		inRG := listGroupResources(t, c.NewListByResourceGroupPager("other-rg", &armresources.ClientListByResourceGroupOptions{Filter: ptr("tagName eq 'kubernetes.io_cluster.aks'")}))
		if len(inRG) != 1 {
			t.Errorf("other-rg tagged = %v", inRG)
		}
		page, err := c.NewListPager(&armresources.ClientListOptions{Filter: ptr("tagName eq 'role'")}).NextPage(ctx(t))
		if err != nil || len(page.Value) != 1 || page.Value[0].Tags != nil {
			t.Errorf("tag-filtered items must come without tags: %v %+v", err, page.Value)
		}
		typed := listResources(t, c.NewListPager(&armresources.ClientListOptions{Filter: ptr("resourceType eq 'microsoft.compute/virtualmachinescalesets'")}))
		if len(typed) != 2 {
			t.Errorf("scale sets = %v", typed)
		}
		_, err = c.NewListPager(&armresources.ClientListOptions{Filter: ptr("substringof('a', name)")}).NextPage(ctx(t))
		wantARMError(t, err, http.StatusBadRequest, "InvalidFilterInQueryString")
		got, err := c.GetByID(ctx(t), e.nic, "2024-05-01", nil)
		if err != nil || *got.Name != "nic-0" || deref(got.Tags)["kubernetes.io_cluster.aks"] != "owned" {
			t.Errorf("GetByID = %+v, %v", got, err)
		}
		groups, err := armresources.NewResourceGroupsClient(env.SubscriptionID, env.Credential, env.ClientOptions)
		if err != nil {
			t.Fatal(err)
		}
		if g, err := groups.Get(ctx(t), rg, nil); err != nil || *g.Name != rg {
			t.Errorf("group get: %v", err)
		}
		_, err = groups.Get(ctx(t), "missing", nil)
		wantARMError(t, err, http.StatusNotFound, "ResourceGroupNotFound")
	}, armsimtest.WithPageSize(4))
}

func collect[T any](t *testing.T, p *runtime.Pager[T], ids func(T) []*armresources.GenericResourceExpanded) []string {
	t.Helper()
	var out []string
	for p.More() {
		page, err := p.NextPage(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range ids(page) {
			out = append(out, *r.ID)
		}
	}
	sort.Strings(out)
	return out
}

func listResources(t *testing.T, p *runtime.Pager[armresources.ClientListResponse]) []string {
	t.Helper()
	return collect(t, p, func(r armresources.ClientListResponse) []*armresources.GenericResourceExpanded { return r.Value })
}

func listGroupResources(t *testing.T, p *runtime.Pager[armresources.ClientListByResourceGroupResponse]) []string {
	t.Helper()
	return collect(t, p, func(r armresources.ClientListByResourceGroupResponse) []*armresources.GenericResourceExpanded {
		return r.Value
	})
}

func armsimResource(typ, name string, tags map[string]string) armsim.Resource {
	return armsim.Resource{Type: typ, Name: name, Tags: tags}
}
