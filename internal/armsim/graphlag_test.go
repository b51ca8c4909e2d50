package armsim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v4"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

// TestResourceGraphIndexDelay: Resource Graph shows a tag change only once
// its indexing delay has passed (by default DefaultGraphIndexDelay), while
// a GET sees it at once; a query in between sees the tags from before, on
// resources, resource groups and subscriptions alike.
func TestResourceGraphIndexDelay(t *testing.T) {
	clock := armsim.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	env := armsimtest.Start(t, armsimtest.WithClock(clock))
	if d := env.Server.GraphIndexDelay(); d != armsim.DefaultGraphIndexDelay || d < time.Second {
		t.Fatalf("default delay %v, want %v", d, armsim.DefaultGraphIndexDelay)
	}
	e := seedEstate(t, env.Server, env.SubscriptionID)
	c, err := armresourcegraph.NewClient(env.Credential, env.ClientOptions)
	if err != nil {
		t.Fatal(err)
	}
	classified := func(table string) int {
		rows, _ := graphQuery(t, c, env.SubscriptionID, table+` | where tags['lagkey'] == 'blue' | project id, tags`, 1000)
		return len(rows)
	}
	group := "/subscriptions/" + env.SubscriptionID + "/resourceGroups/" + rg
	if _, err := tagsClient(t, env).BeginUpdateAtScope(ctx(t), e.uniform, armresources.TagsPatchResource{
		Operation: ptr(armresources.TagsPatchOperationMerge), Properties: &armresources.Tags{Tags: ptrMap(map[string]string{"lagkey": "blue"})}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := env.Server.SetTags(group, map[string]string{"lagkey": "blue"}); err != nil {
		t.Fatal(err)
	}
	got, err := tagsClient(t, env).GetAtScope(ctx(t), e.uniform, nil)
	if err != nil || *got.Properties.Tags["lagkey"] != "blue" {
		t.Fatalf("a GET sees the write at once: %v %v", got, err)
	}
	clock.Advance(armsim.DefaultGraphIndexDelay - time.Millisecond)
	if n, m := classified("resources"), classified("resourcecontainers"); n != 0 || m != 0 {
		t.Fatalf("before the delay Resource Graph shows %d resources and %d containers with the new tag", n, m)
	}
	rows, _ := graphQuery(t, c, env.SubscriptionID, `resources | where id =~ '`+strings.ToUpper(e.uniform)+`' | project id, tags`, 10)
	if len(rows) != 1 || rows[0]["tags"].(map[string]any)["lagkey"] != nil {
		t.Fatalf("the row shows its tags from before the write: %v", rows)
	}
	clock.Advance(time.Millisecond)
	if n, m := classified("resources"), classified("resourcecontainers"); n != 1 || m != 1 {
		t.Fatalf("after the delay Resource Graph shows %d resources and %d containers with the new tag, want 1 and 1", n, m)
	}
	env.Server.SetGraphIndexDelay(0)
	if err := env.Server.SetTags(e.uniform, map[string]string{"lagkey": "red"}); err != nil {
		t.Fatal(err)
	}
	if n := classified("resources"); n != 0 {
		t.Fatalf("without a delay the change shows at once, got %d", n)
	}
}
