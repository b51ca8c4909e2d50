package azure

import (
	"slices"
	"strings"
	"testing"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud"
)

// TestReadTagsAndServiceResources: ReadTags reads the disks it is given in
// one Resource Graph query (a missing one is Missing, a bad ID Unread),
// and ServiceResources tells a Service's own public IP from one Services
// share; without a subscription the search is a failed scope, not an
// error.
func TestReadTagsAndServiceResources(t *testing.T) {
	env := startArmsim(t)
	d := env.resource("rg", armsim.Resource{Type: armsim.TypeDisk, Name: "d", Tags: map[string]string{"a": "1"}})
	own := env.resource("rg", armsim.Resource{Type: armsim.TypePublicIP, Name: "ip1", Tags: map[string]string{ServiceTag: "shop/web"}})
	env.resource("rg", armsim.Resource{Type: armsim.TypePublicIP, Name: "ip2", Tags: map[string]string{ServiceTag: "shop/a,shop/b"}})
	missing := strings.TrimSuffix(d, "/d") + "/gone"
	p := env.provider()
	r, err := p.ReadTags(t.Context(), []string{d, missing, "not-an-id"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Resources) != 1 || r.Resources[0].Tags["a"] != "1" || !slices.Equal(r.Missing, []string{missing}) ||
		!slices.Equal(r.Unread, []string{"not-an-id"}) {
		t.Errorf("ReadTags: %+v", r)
	}
	if n := armCalls(env.Server, "ResourceGraph.Resources")["ResourceGraph.Resources"]; n != 1 {
		t.Errorf("%d Resource Graph queries, want 1", n)
	}
	found, err := p.ServiceResources(t.Context(), []string{"shop/web", "shop/a", "shop/b", "shop/none"})
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Own["shop/web"]) != 1 || !strings.EqualFold(found.Own["shop/web"][0].ID, own) || len(found.Shared["shop/a"]) != 1 ||
		len(found.Shared["shop/b"]) != 1 || len(found.Own["shop/none"])+len(found.Shared["shop/none"]) != 0 {
		t.Errorf("ServiceResources: %+v", found)
	}
	cfg := armsimConfig(env)
	cfg.DefaultSubscription = ""
	noSub := newTestProvider(t, env, &cfg)
	found, err = noSub.ServiceResources(t.Context(), []string{"shop/web"})
	if err != nil || len(found.Failed) != 1 || !strings.Contains(found.Failed[0].Err.Error(), "subscription") {
		t.Errorf("without a subscription: %+v, %v", found, err)
	}
	var _ cloud.ServiceFinder = p.Provider
}
