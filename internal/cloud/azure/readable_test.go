package azure

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
)

// TestDiscoverReportsAPartialRead: an identity that may read one resource
// group of a subscription, not the subscription: Resource Graph answers
// with that group's resources only and no error. Discover returns them and
// reports the subscription as searched in part (never complete); another
// subscription the identity reads whole is not reported. The read rights
// are checked once per subscription within ReadCheckEvery.
func TestDiscoverReportsAPartialRead(t *testing.T) {
	env := startArmsim(t)
	a, b := env.SubscriptionID, otherSubscription
	env.seedOwned("c1", 0, a, b)
	estB := armsimtest.ClusterEstate{Infra: "c1", ResourceGroup: "rg-second", Subscriptions: []string{a},
		Tags: map[string]string{"kubernetes.io_cluster.c1": "owned"}}
	if err := estB.Seed(env.Server); err != nil {
		t.Fatal(err)
	}
	env.Server.SetReadScopes(armsimtest.ClientID, "/subscriptions/"+a+"/resourceGroups/rg-c1", "/subscriptions/"+b)
	p := env.provider()
	now := time.Now()
	p.now = func() time.Time { return now }
	for range 2 {
		d, err := p.Discover(t.Context(), classifiers, cloud.DiscoverOptions{Scopes: []string{a, b}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range d.Resources {
			if strings.Contains(strings.ToLower(r.ID), "/resourcegroups/rg-second/") {
				t.Errorf("%s is not readable, yet found", r.ID)
			}
		}
		if len(d.Resources) == 0 || len(d.Failed) != 1 || d.Failed[0].Scope != a || !errors.Is(d.Failed[0].Err, ErrPartialRead) ||
			!containsAll(d.Failed[0].Err.Error(), a, "Reader") {
			t.Fatalf("%d resources, failed %v; want the readable ones and %s reported as read in part", len(d.Resources), d.Failed, a)
		}
	}
	if n := env.Server.Calls().Count("Permissions.ListForSubscription"); n != 2 {
		t.Errorf("%d permissions reads for 2 searches of 2 subscriptions, want 2", n)
	}
	now = now.Add(ReadCheckEvery)
	env.Server.SetReadScopes(armsimtest.ClientID)
	d, err := p.Discover(t.Context(), classifiers, cloud.DiscoverOptions{Scopes: []string{a, b}})
	if err != nil || len(d.Failed) != 0 {
		t.Errorf("once Reader on the subscription: failed %v, %v", d.Failed, err)
	}
}
