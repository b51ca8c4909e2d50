package azure

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud"
)

// TestDiscoverNamesIgnoreCase: ARM compares tag names without regard to
// case, so a resource tagged KUBERNETES.IO_CLUSTER.QA=owned carries the
// classifier kubernetes.io_cluster.qa: owned; values compare exactly. On
// 10,000 classified resources (a third of them spelling the name in upper
// case, a third in title case) among 2,000 others, each carrying ten more
// tags, Discover finds every one and only those, in ceil(10000/1000) = 10
// Resource Graph requests: the expanded tags that do not match never
// become rows.
func TestDiscoverNamesIgnoreCase(t *testing.T) {
	env := startArmsim(t)
	const classified, others, extraTags = 10_000, 2_000, 10
	name := "kubernetes.io_cluster.qa"
	spellings := []string{name, strings.ToUpper(name), "Kubernetes.IO_Cluster.QA"}
	var rs []armsim.Resource
	for i := range classified + others {
		tg := map[string]string{}
		for j := range extraTags {
			tg[fmt.Sprintf("extra%02d", j)] = "v"
		}
		switch {
		case i < classified:
			tg[spellings[i%len(spellings)]] = "owned"
		case i%2 == 0:
			tg[strings.ToUpper(name)] = "OWNED" // the value differs in case
		default:
			tg[name] = "shared"
		}
		rs = append(rs, armsim.Resource{Type: armsim.TypeDisk, Name: fmt.Sprintf("d%05d", i), Tags: tg})
	}
	st := armsim.State{Subscriptions: []armsim.Subscription{{ID: env.SubscriptionID,
		ResourceGroups: []armsim.ResourceGroup{{Name: "rg-qa", Resources: rs}}}}}
	if err := env.Server.Add(st); err != nil {
		t.Fatal(err)
	}
	p := env.provider()
	env.Server.ResetCalls()
	d, err := p.Discover(t.Context(), []cloud.Classifier{{Name: name, Value: "owned"}}, cloud.DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d resources found in %d Resource Graph requests", len(d.Resources), d.Calls)
	if len(d.Resources) != classified || len(d.Failed) != 0 {
		t.Errorf("found %d resources (failed %v), want %d", len(d.Resources), d.Failed, classified)
	}
	for _, r := range d.Resources {
		if n := strings.TrimPrefix(r.ID[strings.LastIndex(r.ID, "/")+1:], "d"); n >= fmt.Sprintf("%05d", classified) {
			t.Errorf("%s is not classified", r.ID)
		}
	}
	if got := env.Server.Calls().Count("ResourceGraph.Resources"); d.Calls != 10 || got != 10 {
		t.Errorf("%d requests (armsim counted %d), want 10", d.Calls, got)
	}
}
