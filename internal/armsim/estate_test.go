package armsim_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v4"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/tags/tagstest"
)

// graphAll runs q over subs (all pages of top rows) and returns the rows
// and the number of requests.
func graphAll(t testing.TB, c *armresourcegraph.Client, subs []string, q string, top int32) ([]map[string]any, int) {
	t.Helper()
	req := armresourcegraph.QueryRequest{Query: &q, Options: &armresourcegraph.QueryRequestOptions{Top: &top}}
	for _, s := range subs {
		req.Subscriptions = append(req.Subscriptions, to.Ptr(s))
	}
	var rows []map[string]any
	for pages := 1; ; pages++ {
		resp, err := c.Resources(ctx(t), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.Data.([]any) {
			rows = append(rows, r.(map[string]any))
		}
		if resp.SkipToken == nil || *resp.SkipToken == "" {
			return rows, pages
		}
		req.Options.SkipToken = resp.SkipToken
	}
}

func graphClient(t testing.TB, env *armsimtest.Env) *armresourcegraph.Client {
	t.Helper()
	c, err := armresourcegraph.NewClient(env.Credential, env.ClientOptions)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ids returns the sorted "id" column of rows.
func ids(rows []map[string]any) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, r["id"].(string))
	}
	sort.Strings(out)
	return out
}

// nTags returns n tags t00..t(n-1).
func nTags(n int) map[string]string { return tagstest.Numbered("t", n) }

// TestClusterTypesEndToEnd: every type a cluster owns can be read by ID,
// tagged through the Tags API at its scope within its type's limits, and
// appears in Resource Graph with its lower-cased type; each call is
// counted under its operation.
func TestClusterTypesEndToEnd(t *testing.T) {
	env := armsimtest.Start(t, armsimtest.WithPlainHTTP())
	s, sub := env.Server, env.SubscriptionID
	est := armsimtest.ClusterEstate{Infra: "c1", Tags: map[string]string{"cluster": "c1"}}
	types := append(append([]string{}, armsimtest.ClusterTypes...), armsim.TypePrivateDNSZoneLink)
	if err := est.Seed(s); err != nil {
		t.Fatal(err)
	}
	link, err := s.CreateResource(sub, "rg-c1", armsim.Resource{Type: armsim.TypePrivateDNSZoneLink,
		Name: est.Name(armsim.TypePrivateDNSZone, 0) + "/vnet-link", Tags: map[string]string{"cluster": "c1"}})
	if err != nil {
		t.Fatal(err)
	}
	rc, tc, gc := resourcesClient(t, env), tagsClient(t, env), graphClient(t, env)
	s.ResetCalls()
	for _, typ := range types {
		id := link
		if typ != armsim.TypePrivateDNSZoneLink {
			id = est.ID(sub, typ, 0)
		}
		t.Run(typ[strings.LastIndex(typ, "/")+1:], func(t *testing.T) {
			got, err := rc.GetByID(ctx(t), id, "2024-05-01", nil)
			if err != nil {
				t.Fatal(err)
			}
			if *got.ID != id || !strings.EqualFold(*got.Type, typ) || deref(got.Tags)["cluster"] != "c1" {
				t.Errorf("GET = %s %s %v", *got.ID, *got.Type, deref(got.Tags))
			}
			global := strings.Contains(strings.ToLower(typ), "dnszones")
			if (*got.Location == "global") != global {
				t.Errorf("location %q", *got.Location)
			}
			// The type's tag limit: up to it through the Tags API, one more refused.
			limit := armsim.TagLimit(typ)
			merge := func(tags map[string]string) error {
				_, err := tc.BeginUpdateAtScope(ctx(t), id, armresources.TagsPatchResource{
					Operation: to.Ptr(armresources.TagsPatchOperationMerge), Properties: &armresources.Tags{Tags: ptrMap(tags)}}, nil)
				return err
			}
			if err := merge(nTags(limit - 1)); err != nil {
				t.Fatalf("%d tags: %v", limit, err)
			}
			wantARMError(t, merge(map[string]string{"one-more": "x"}), http.StatusBadRequest, armsim.CodeTooManyTags)
			r, err := tc.GetAtScope(ctx(t), id, nil)
			if err != nil || len(r.Properties.Tags) != limit {
				t.Errorf("tags after the refusal: %d, %v", len(r.Properties.Tags), err)
			}
			long := strings.Repeat("n", armsim.TagNameLimit(typ)+1)
			_, err = tc.BeginUpdateAtScope(ctx(t), id, armresources.TagsPatchResource{
				Operation: to.Ptr(armresources.TagsPatchOperationReplace), Properties: &armresources.Tags{Tags: ptrMap(map[string]string{long: "x"})}}, nil)
			wantARMError(t, err, http.StatusBadRequest, armsim.CodeInvalidTagNameLength)
			rows, _ := graphAll(t, gc, []string{sub}, `resources | where id =~ '`+strings.ToUpper(id)+`' | project id, type, resourceGroup`, 10)
			if len(rows) != 1 || rows[0]["type"] != strings.ToLower(typ) || rows[0]["resourceGroup"] != "rg-c1" {
				t.Errorf("graph rows %v", rows)
			}
		})
	}
	if armsim.TagNameLimit(armsim.TypeStorageAccount) != 128 || armsim.TagLimit("MICROSOFT.NETWORK/PRIVATEDNSZONES") != 15 || armsim.TagLimit(armsim.TypeDisk) != 50 {
		t.Error("limits")
	}
	c := s.Calls()
	n := len(types)
	for op, want := range map[string]int{"Resources.GetByID": n, "Tags.UpdateAtScope": 3 * n, "Tags.GetAtScope": n, "ResourceGraph.Resources": n} {
		if got := c.Count(op); got != want {
			t.Errorf("%s: %d calls, want %d", op, got, want)
		}
	}
}

// TestResourceGraphContainersUnionOr: resource groups and subscriptions
// are rows of resourcecontainers; union appends a table; "or" joins
// conditions with "and" binding tighter; quotes in literals are escaped.
//
// The test is about the query language, not about when Resource Graph
// shows a write: the subscription's tags are seeded with a tag write, so
// the indexing delay is off (TestResourceGraphIndexDelay covers it).
func TestResourceGraphContainersUnionOr(t *testing.T) {
	env := armsimtest.Start(t, armsimtest.WithPlainHTTP(), armsimtest.WithOptions(func(o *armsim.Options) { o.GraphIndexDelay = -1 }))
	s, sub := env.Server, env.SubscriptionID
	const other = "00000000-0000-4000-8000-0000000000b2"
	if err := s.SetTags("/subscriptions/"+sub, map[string]string{"a": "1"}); err != nil {
		t.Fatal(err)
	}
	rgA, _ := s.CreateResourceGroup(sub, armsim.ResourceGroup{Name: "RG-A", Tags: map[string]string{"a": "1"}})
	rgB, _ := s.CreateResourceGroup(other, armsim.ResourceGroup{Name: "rg-b", Tags: map[string]string{"b": "it's"}})
	diskA := must(t)(s.CreateResource(sub, "RG-A", armsim.Resource{Type: armsim.TypeDisk, Name: "d-a", Tags: map[string]string{"a": "1", "b": "2"}}))
	diskB := must(t)(s.CreateResource(other, "rg-b", armsim.Resource{Type: armsim.TypeDisk, Name: "d-b", Tags: map[string]string{"b": "2"}}))
	zone := must(t)(s.CreateResource(other, "rg-b", armsim.Resource{Type: armsim.TypeDNSZone, Name: "z.example.com", Tags: map[string]string{"A": "1"}}))
	_ = zone
	c := graphClient(t, env)
	both := []string{sub, other}

	rows, _ := graphAll(t, c, both, `resourcecontainers | project id, name, type, subscriptionId, resourceGroup, tags`, 1000)
	want := []string{"/subscriptions/" + other, "/subscriptions/" + sub, rgA, rgB}
	sort.Strings(want)
	if got := ids(rows); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("containers %v, want %v", got, want)
	}
	for _, r := range rows {
		switch r["id"] {
		case rgA:
			if r["type"] != armsim.GraphTypeResourceGroup || r["name"] != "RG-A" || r["resourceGroup"] != "rg-a" || r["subscriptionId"] != sub ||
				fmt.Sprint(r["tags"]) != "map[a:1]" {
				t.Errorf("group row %v", r)
			}
		case "/subscriptions/" + sub:
			if r["type"] != armsim.GraphTypeSubscription || r["resourceGroup"] != "" || fmt.Sprint(r["tags"]) != "map[a:1]" {
				t.Errorf("subscription row %v", r)
			}
		}
	}

	classified := `resources | union resourcecontainers | where type != 'microsoft.resources/subscriptions' and (tags['a'] == '1' or tags['b'] == 'it\'s') | project id, type`
	rows, _ = graphAll(t, c, both, classified, 1000)
	want = []string{diskA, rgA, rgB} // the subscription is excluded; tag names are case-sensitive (the zone's "A")
	sort.Strings(want)
	if got := ids(rows); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("classified %v, want %v", got, want)
	}
	// Without the parentheses, "and" binds tighter: the subscription's a=1 matches.
	rows, _ = graphAll(t, c, both, `resources | union resourcecontainers | where type != 'microsoft.resources/subscriptions' and tags['b'] == 'it\'s' or tags['a'] == '1' | project id`, 1000)
	want = []string{"/subscriptions/" + sub, diskA, rgA, rgB}
	sort.Strings(want)
	if got := ids(rows); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("precedence %v, want %v", got, want)
	}
	// A where before the union filters the left table only.
	rows, _ = graphAll(t, c, []string{other}, `resources | where name == 'none' | union resourcecontainers | project id`, 1000)
	want = []string{"/subscriptions/" + other, rgB}
	if got := ids(rows); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("where then union %v, want %v", got, want)
	}
	// Verbatim and double-quoted literals, escapes.
	for _, q := range []string{
		`resourcecontainers | where tags['b'] == @'it''s'`,
		`resourcecontainers | where tags["b"] == "it's"`,
		`resourcecontainers | where tags['b'] in ('x', 'it\'s')`,
	} {
		if rows, _ := graphAll(t, c, both, q, 1000); len(rows) != 1 || rows[0]["id"] != rgB {
			t.Errorf("%s: %v", q, ids(rows))
		}
	}
	rows, _ = graphAll(t, c, both, `resources | where tags['b'] == '2' and (name == 'd-a' or name == 'd-b') and (type == 'nope' or isnotempty(tags['b']))`, 1000)
	if fmt.Sprint(ids(rows)) != fmt.Sprint([]string{diskA, diskB}) {
		t.Errorf("nested: %v", ids(rows))
	}
	_, err := c.Resources(ctx(t), armresourcegraph.QueryRequest{Query: ptr(`resources | where ` + strings.Repeat("(", 40) + `name == 'x'` + strings.Repeat(")", 40))}, nil)
	wantARMError(t, err, http.StatusBadRequest, "BadRequest")
}

// TestResourceGraphFaultScopedToSubscription: a fault scoped to a
// subscription fails a Resource Graph query that names it, as a whole (ARG
// answers 403 AccessDenied when one subscription may not be read), and
// ARM requests under it with ARM's code; queries without it succeed.
func TestResourceGraphFaultScopedToSubscription(t *testing.T) {
	env := armsimtest.Start(t, armsimtest.WithPlainHTTP())
	s, sub := env.Server, env.SubscriptionID
	const denied = "00000000-0000-4000-8000-0000000000d3"
	est := armsimtest.ClusterEstate{Infra: "c", Subscriptions: []string{sub, denied}, Tags: map[string]string{"k": "v"}}
	if err := est.Seed(s); err != nil {
		t.Fatal(err)
	}
	s.AddFault(armsim.Fault{Status: http.StatusForbidden, Scope: "/subscriptions/" + denied})
	c := graphClient(t, env)
	q := `resources | project id`
	_, err := c.Resources(ctx(t), armresourcegraph.QueryRequest{Query: &q, Subscriptions: []*string{&sub, to.Ptr(denied)}}, nil)
	wantARMError(t, err, http.StatusForbidden, "AccessDenied")
	if rows, _ := graphAll(t, c, []string{sub}, q, 1000); len(rows) != len(armsimtest.ClusterTypes) {
		t.Errorf("allowed subscription: %d rows", len(rows))
	}
	rc, err := armresources.NewClient(denied, env.Credential, noRetry(env))
	if err != nil {
		t.Fatal(err)
	}
	_, err = rc.GetByID(ctx(t), est.ID(denied, armsim.TypeDisk, 0), "2024-05-01", nil)
	wantARMError(t, err, http.StatusForbidden, "AuthorizationFailed")
}

// TestClusterEstateLarge: 10,000 resources in 5 subscriptions load at
// once, and one Resource Graph query over all of them (union with the
// groups, OR-ed classifiers) pages through 1000 rows a request.
func TestClusterEstateLarge(t *testing.T) {
	env := armsimtest.Start(t, armsimtest.WithPlainHTTP(), armsimtest.WithThrottle(armsim.ThrottleOptions{Disabled: true}))
	var subs []string
	for i := range 5 {
		subs = append(subs, fmt.Sprintf("00000000-0000-4000-8000-%012d", 100+i))
	}
	est := armsimtest.ClusterEstate{Infra: "big", Subscriptions: subs, PerType: 200, Tags: map[string]string{"kubernetes.io_cluster.big": "owned"}}
	if err := est.Seed(env.Server); err != nil {
		t.Fatal(err)
	}
	if n := env.Server.ResourceCount(); n != 10_000 {
		t.Fatalf("%d resources", n)
	}
	want := append(est.ResourceIDs(), est.GroupIDs()...)
	for _, id := range []string{want[0], want[len(want)-1], est.ID(subs[3], armsim.TypeStorageAccount, 199)} {
		if !env.Server.Exists(id) {
			t.Errorf("%s does not exist", id)
		}
	}
	sort.Strings(want)
	q := `resources | union resourcecontainers | where type != 'microsoft.resources/subscriptions' and (tags['kubernetes.io_cluster.big'] == 'owned' or tags['other'] == 'x') | project id, name, type, subscriptionId, resourceGroup, tags`
	rows, pages := graphAll(t, graphClient(t, env), subs, q, 1000)
	if pages != 11 || len(rows) != 10_005 {
		t.Errorf("%d rows in %d pages, want 10005 in 11", len(rows), pages)
	}
	if got := ids(rows); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Error("the rows are not the estate's resources and groups, each once")
	}
	if name := est.Name(armsim.TypeStorageAccount, 7); name != "stbig0007" || len(armsimtest.ClusterEstate{Infra: strings.Repeat("x", 40)}.Name(armsim.TypeStorageAccount, 0)) != 24 {
		t.Errorf("storage account name %q", name)
	}
}

// must returns a function that fails t on a non-nil error.
func must(t *testing.T) func(string, error) string {
	return func(v string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
