package armsim_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

func graphQuery(t *testing.T, c *armresourcegraph.Client, sub, q string, top int32) ([]map[string]any, int) {
	t.Helper()
	var rows []map[string]any
	pages := 0
	req := armresourcegraph.QueryRequest{Query: &q, Subscriptions: []*string{&sub}, Options: &armresourcegraph.QueryRequestOptions{Top: &top}}
	for {
		resp, err := c.Resources(ctx(t), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range resp.Data.([]any) {
			rows = append(rows, r.(map[string]any))
		}
		if resp.SkipToken == nil || *resp.SkipToken == "" {
			return rows, pages
		}
		req.Options.SkipToken = resp.SkipToken
	}
}

func TestResourceGraph(t *testing.T) {
	transports(t, func(t *testing.T, env *armsimtest.Env) {
		e := seedEstate(t, env.Server, env.SubscriptionID)
		c, err := armresourcegraph.NewClient(env.Credential, env.ClientOptions)
		if err != nil {
			t.Fatal(err)
		}
		q := `resources | where type =~ 'Microsoft.Compute/virtualMachines' and resourceGroup in~ ('` + strings.ToUpper(rg) + `', 'other') | project id, name, type, tags`
		rows, pages := graphQuery(t, c, env.SubscriptionID, q, 3)
		if len(rows) != 4 || pages != 2 {
			t.Fatalf("rows %d pages %d: %v", len(rows), pages, rows)
		}
		var names []string
		for _, r := range rows {
			names = append(names, r["name"].(string))
			if r["type"] != "microsoft.compute/virtualmachines" || len(r) != 4 {
				t.Errorf("row %v", r)
			}
		}
		sort.Strings(names)
		if strings.Join(names, ",") != "as-vm,flex-0,flex-1,standalone-vm" {
			t.Errorf("names %v", names)
		}
		rows, _ = graphQuery(t, c, env.SubscriptionID, `Resources | where tags['kubernetes.io_cluster.aks'] == 'owned' | project id`, 1000)
		if len(rows) != 6 {
			t.Errorf("owned rows = %d", len(rows))
		}
		rows, _ = graphQuery(t, c, env.SubscriptionID, `resources | where tags['KUBERNETES.IO_CLUSTER.AKS'] == 'owned'`, 1000)
		if len(rows) != 0 {
			t.Errorf("tag lookups are case-sensitive in ARG, got %d rows", len(rows))
		}
		rows, _ = graphQuery(t, c, env.SubscriptionID, `resources | where id =~ '`+strings.ToUpper(e.uniform)+`' | project id, tags`, 10)
		if len(rows) != 1 || rows[0]["id"] != e.uniform {
			t.Errorf("by id = %v", rows)
		}
		for _, bad := range []string{
			`resources | summarize count()`,
			`securityresources | project id`,
			`resources | project id | union resourcecontainers`,
			`resources | union (resourcecontainers | where name == 'x')`,
			`resources | where name == 'a\q'`,
			`resources | where (name == 'a'`,
			`resources | where properties.vmId == 'x'`,
			`resources | where name matches regex 'x'`,
			`resources | where name == 'unterminated`,
		} {
			_, err := c.Resources(ctx(t), armresourcegraph.QueryRequest{Query: ptr(bad)}, nil)
			wantARMError(t, err, http.StatusBadRequest, "BadRequest")
		}
	})
}

// TestResourceGraphExpandedTagNamesIgnoreCase: as in Resource Graph,
// tags['name'] looks a name up as spelled, while mv-expand bagexpansion=array
// turns each tag into a [name, value] row compared with =~ (any case) or
// == (exactly); a resource without tags yields no row.
func TestResourceGraphExpandedTagNamesIgnoreCase(t *testing.T) {
	env := armsimtest.Start(t, armsimtest.WithPlainHTTP())
	s, sub := env.Server, env.SubscriptionID
	for name, tg := range map[string]map[string]string{
		"upper": {"KUBERNETES.IO_CLUSTER.QA": "owned", "env": "prod"},
		"lower": {"kubernetes.io_cluster.qa": "owned"},
		"value": {"kubernetes.io_cluster.qa": "Owned"},
		"bare":  nil,
	} {
		if _, err := s.CreateResource(sub, "rg-qa", armsim.Resource{Type: armsim.TypeDisk, Name: name, Tags: tg}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := armresourcegraph.NewClient(env.Credential, env.ClientOptions)
	if err != nil {
		t.Fatal(err)
	}
	names := func(q string) string {
		rows, _ := graphQuery(t, c, sub, q, 1000)
		var out []string
		for _, r := range rows {
			out = append(out, r["name"].(string))
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	for q, want := range map[string]string{
		`resources | where tags['kubernetes.io_cluster.qa'] == 'owned' | project name`:                                                                              "lower",
		`resources | mv-expand bagexpansion=array tag = tags | where tostring(tag[0]) =~ 'kubernetes.io_cluster.qa' and tostring(tag[1]) == 'owned' | project name`: "lower,upper",
		`resources | mv-expand bagexpansion=array tag = tags | where tostring(tag[0]) == 'kubernetes.io_cluster.qa' | project name`:                                 "lower,value",
		`resources | mv-expand bagexpansion=array tag = tags | project name, tags`:                                                                                  "lower,upper,upper,value",
	} {
		if got := names(q); got != want {
			t.Errorf("%s: rows %s, want %s", q, got, want)
		}
	}
	rows, _ := graphQuery(t, c, sub, `resources | mv-expand bagexpansion=array tag = tags | where tostring(tag[1]) == 'prod' | project tags`, 1000)
	if len(rows) != 1 || len(rows[0]["tags"].(map[string]any)) != 2 {
		t.Errorf("the expanded row keeps the full tags column: %v", rows)
	}
	for _, bad := range []string{
		`resources | mv-expand tags`,
		`resources | mv-expand bagexpansion=bag tag = tags`,
		`resources | mv-expand bagexpansion=array name = tags`,
		`resources | mv-expand bagexpansion=array tag = tags | mv-expand bagexpansion=array t2 = tags`,
		`resources | where tostring(tag[0]) == 'x'`,
		`resources | mv-expand bagexpansion=array tag = tags | where tostring(tag[2]) == 'x'`,
	} {
		_, err := c.Resources(ctx(t), armresourcegraph.QueryRequest{Query: ptr(bad)}, nil)
		wantARMError(t, err, http.StatusBadRequest, "BadRequest")
	}
}

func TestResourceGraphLargePages(t *testing.T) {
	env := armsimtest.Start(t, armsimtest.WithPlainHTTP(), armsimtest.WithThrottle(armsim.ThrottleOptions{Disabled: true}))
	for i := 0; i < 2500; i++ {
		if _, err := env.Server.CreateResource(env.SubscriptionID, "big", armsim.Resource{Type: armsim.TypeDisk, Name: "d" + itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := armresourcegraph.NewClient(env.Credential, env.ClientOptions)
	if err != nil {
		t.Fatal(err)
	}
	rows, pages := graphQuery(t, c, env.SubscriptionID, `resources | project id`, 5000)
	if len(rows) != 2500 || pages != 3 {
		t.Errorf("rows %d pages %d; want 2500 rows in pages of at most 1000", len(rows), pages)
	}
}

// TestGraphLeavesOutWhatTheCallerCannotRead: a client that may read one
// resource group gets that group's rows and no error; the other group's
// resources, the subscription's row, and read actions in the permissions
// of the subscription are left out.
func TestGraphLeavesOutWhatTheCallerCannotRead(t *testing.T) {
	env := armsimtest.Start(t)
	seedEstate(t, env.Server, env.SubscriptionID)
	other, err := env.Server.CreateResource(env.SubscriptionID, "rg-other", armsim.Resource{Type: armsim.TypeDisk, Name: "hidden"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := armresourcegraph.NewClient(env.Credential, env.ClientOptions)
	if err != nil {
		t.Fatal(err)
	}
	const q = `resources | union resourcecontainers | project id`
	all, _ := graphQuery(t, c, env.SubscriptionID, q, 1000)
	env.Server.SetPermissions(armsimtest.ClientID, "*/read", "Microsoft.Resources/tags/write")
	env.Server.SetReadScopes(armsimtest.ClientID, groupScope(env))
	some, _ := graphQuery(t, c, env.SubscriptionID, q, 1000)
	ids := map[string]bool{}
	for _, r := range some {
		ids[strings.ToLower(r["id"].(string))] = true
	}
	if len(some) == 0 || len(some) >= len(all) || ids[strings.ToLower(other)] || ids["/subscriptions/"+env.SubscriptionID] ||
		!ids[strings.ToLower(groupScope(env))] {
		t.Errorf("%d of %d rows readable: %v", len(some), len(all), ids)
	}
	var perms struct {
		Value []struct{ Actions []string } `json:"value"`
	}
	if err := env.ARM(ctx(t), http.MethodGet, "/subscriptions/"+env.SubscriptionID+"/providers/Microsoft.Authorization/permissions?api-version=2022-04-01", nil, &perms); err != nil {
		t.Fatal(err)
	}
	if len(perms.Value) != 1 || strings.Join(perms.Value[0].Actions, ",") != "Microsoft.Resources/tags/write" {
		t.Errorf("permissions of a subscription read in part: %+v", perms)
	}
	env.Server.SetReadScopes(armsimtest.ClientID)
	if again, _ := graphQuery(t, c, env.SubscriptionID, q, 1000); len(again) != len(all) {
		t.Errorf("after lifting the restriction: %d rows, want %d", len(again), len(all))
	}
}
