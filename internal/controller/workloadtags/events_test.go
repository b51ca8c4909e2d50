package workloadtags_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/cloudchangetest"
	"github.com/tagsync/tagsync/internal/controller/workloadtags"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestAChangeRevertsAnOutsideEditAtOnce: with events on (the policy polls
// only at the hub's 2-hour resync) and Resource Graph showing writes only
// after 10 minutes, a change of a disk the policy read runs its pass,
// which reads that disk with the Tags API and reverts the edit; a change
// of a disk no policy read runs no pass.
func TestAChangeRevertsAnOutsideEditAtOnce(t *testing.T) {
	disks := newAzureDisks(t)
	hub := cloudchange.NewHub(cloudchange.HubOptions{ResyncInterval: 2 * time.Hour, HealthEvery: 20 * time.Millisecond})
	src := cloudchangetest.NewSource(t.Name())
	h := newHarness(t, azureOn(disks.env), func(o *operator.Options) {
		o.Events = operator.EventsOptions{Hub: hub, Sources: []operator.EventSource{operator.BuiltSource(src)}}
	})
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	d0 := disks.create("d0", nil)
	other := disks.create("other", nil)
	h.claimVolume(shop, "data", nil, csi("disk.csi.azure.com", d0))
	p := h.policy("costs", v1alpha1.ProviderAzure, tag("cost-center", "${namespace.labels['cost-center']}"))
	got := h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)
	if msg := cloudchangetest.CheckCondition(got.Status.Conditions, metav1.ConditionTrue, v1alpha1.ReasonEventsOn, "polling every 2h0m0s"); msg != "" {
		t.Errorf("Events condition: %s", msg)
	}

	disks.env.Server.SetGraphIndexDelay(10 * time.Minute)
	if err := disks.env.Server.SetTags(d0, map[string]string{"cost-center": "hacked"}); err != nil {
		t.Fatal(err)
	}
	reads := disks.count("Tags.GetAtScope")
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", other, "e1", nil)); err != nil {
		t.Fatal(err)
	}
	if n := disks.count("Tags.GetAtScope") - reads; n != 0 {
		t.Errorf("a change of a disk no policy read cost %d reads", n)
	}
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("azure", d0, "e2", nil)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitFor, "the edit reverted", func() string {
		if g := disks.tags(d0)["cost-center"]; g != "cc-1" {
			return "cost-center=" + g
		}
		return ""
	})
	if n := disks.count("Tags.GetAtScope") - reads; n != 1 {
		t.Errorf("the change cost %d Tags API reads, want 1", n)
	}
}
