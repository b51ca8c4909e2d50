package workloadtags_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
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
	hub, events := eventsOn(t)
	h := newHarness(t, azureOn(disks.env), events)
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

// TestAWSAChangeRevertsAnOutsideEditAtOnce: on AWS, with events on (the
// policy polls only at the hub's 2-hour resync), EventBridge's tag change
// of a volume the policy read (named by its ARN, the policy knowing it by
// its bare ID from the PersistentVolume) runs its pass, which reverts the
// edit with one CreateTags; a change of a volume no policy read runs no
// pass.
func TestAWSAChangeRevertsAnOutsideEditAtOnce(t *testing.T) {
	moto := testenv.StartMoto(t)
	hub, events := eventsOn(t)
	var provider *aws.Provider
	h := newHarness(t, func(*harness) cloud.Provider { provider = awstest.Provider(t, moto); return provider }, events)
	ec2c := ec2.NewFromConfig(moto.Config)
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	v0, other := createVolume(t, ec2c, "pv-0"), createVolume(t, ec2c, "pv-other")
	h.claimVolume(shop, "data", nil, csi("ebs.csi.aws.com", v0))
	p := h.policy("costs", v1alpha1.ProviderAWS, tag("cost-center", "${namespace.labels['cost-center']}"))
	h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)

	arn := func(id string) string {
		return fmt.Sprintf("arn:aws:ec2:%s:%s:volume/%s", testenv.MotoRegion, testenv.MotoAccountID, id)
	}
	if _, err := ec2c.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{v0},
		Tags: []ec2types.Tag{{Key: sdkaws.String("cost-center"), Value: sdkaws.String("hacked")}}}); err != nil {
		t.Fatal(err)
	}
	writes := provider.Calls()["ec2:CreateTags"]
	reads := provider.Calls()["ec2:DescribeVolumes"]
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("aws", arn(other), "e1", awstest.Tags(t, moto, other))); err != nil {
		t.Fatal(err)
	}
	if n := provider.Calls()["ec2:DescribeVolumes"] - reads; n != 0 {
		t.Errorf("a change of a volume no policy read cost %d reads", n)
	}
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("aws", arn(v0), "e2", awstest.Tags(t, moto, v0))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitFor, "the edit reverted", func() string {
		if g := awstest.Tags(t, moto, v0)["cost-center"]; g != "cc-1" {
			return "cost-center=" + g
		}
		return ""
	})
	if n := provider.Calls()["ec2:CreateTags"] - writes; n != 1 {
		t.Errorf("the revert took %d CreateTags, want 1", n)
	}
}

// TestAFightStopsAndNamesTheWriter: another writer removes the policy's key
// from a disk each time it is written (as a creator that strips tags it
// does not manage does), and its Event Grid changes name it. The policy
// puts the key back 3 times, then stops: 4 writes in all, Conflict
// Fighting naming the writer, one Warning event, the fights gauge at 1.
// A restarted manager (a new leader) keeps it stopped, from the status.
// Acknowledging (the annotation) writes it once more.
func TestAFightStopsAndNamesTheWriter(t *testing.T) {
	disks := newAzureDisks(t)
	hub, events := eventsOn(t)
	h := newHarness(t, azureOn(disks.env), events)
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	d0 := disks.create("d0", nil)
	h.claimVolume(shop, "data", nil, csi("disk.csi.azure.com", d0))
	p := h.policy("costs", v1alpha1.ProviderAzure, tag("cost-center", "${namespace.labels['cost-center']}"))
	h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)
	disks.env.Server.SetGraphIndexDelay(0)

	writes := func() int {
		n := 0
		for _, r := range h.records() {
			if r.Resource == d0 && r.Result == audit.ResultOK {
				n++
			}
		}
		return n
	}
	// strip removes the key, as the other writer does, and delivers its
	// change.
	strip := func(i int) {
		t.Helper()
		if err := disks.env.Server.DeleteTags(d0, "cost-center"); err != nil {
			t.Fatal(err)
		}
		c := cloudchangetest.Write("azure", d0, fmt.Sprintf("strip-%d", i), nil)
		c.Writer = cloudchange.Writer{ID: "aks-reconciler"}
		if err := cloudchangetest.Publish(t, hub, waitFor, c); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 3; i++ {
		strip(i)
		testenv.Eventually(t, waitFor, fmt.Sprintf("put-back %d", i), func() string {
			if g := disks.tags(d0)["cost-center"]; g != "cc-1" {
				return "cost-center=" + g
			}
			return ""
		})
	}
	waitWrites := func(want int) {
		t.Helper()
		testenv.Eventually(t, waitFor, fmt.Sprintf("%d audited writes", want), func() string {
			if n := writes(); n != want {
				return fmt.Sprintf("%d writes", n)
			}
			return ""
		})
	}
	waitWrites(4)
	strip(4)
	got := h.waitReady(p.Name, metav1.ConditionFalse, workloadtags.ReasonPartiallyTagged)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionConflict); c == nil || c.Reason != workloadtags.ReasonFighting ||
		!strings.Contains(c.Message, "cost-center") || !strings.Contains(c.Message, "aks-reconciler") {
		t.Errorf("Conflict = %+v, want Fighting over cost-center naming aks-reconciler", c)
	}
	if n := writes(); n != 4 {
		t.Errorf("%d writes after the fight stopped, want 4", n)
	}
	if g := testenv.Counter(t, "tagsync_workloadtags_fights", map[string]string{"policy": p.Name}); g != 1 {
		t.Errorf("fights gauge %v, want 1", g)
	}
	strip(5)
	got = h.pass(p)
	if n := writes(); n != 4 {
		t.Errorf("%d writes after another strip, want still 4", n)
	}

	// A new leader (a manager with no memory of the fight) reads the
	// writes from the status and does not start the fight again.
	if rw := got.Status.RecentWrites; rw == nil || len(rw.Restores) != 1 || len(rw.Restores[0].Times) != 4 ||
		rw.Restores[0].Tag != "cost-center=cc-1" {
		t.Fatalf("status recentWrites %+v, want the 4 writes of cost-center=cc-1", rw)
	}
	h.restart(azureOn(disks.env))
	if err := disks.env.Server.DeleteTags(d0, "cost-center"); err != nil {
		t.Fatal(err)
	}
	got = h.pass(p)
	if n := writes(); n != 4 {
		t.Errorf("%d writes after a restart, want still 4", n)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionConflict); c == nil || c.Reason != workloadtags.ReasonFighting {
		t.Errorf("after a restart Conflict = %+v, want Fighting", c)
	}

	if err := h.c.Patch(h.ctx, p, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+v1alpha1.AcknowledgeFightsAnnotation+`":"1"}}}`))); err != nil {
		t.Fatal(err)
	}
	disks.waitTag(d0, "cost-center", "cc-1")
	waitWrites(5)
}

// eventsOn is a hub of cloud changes that polls only every 2 hours, with a
// source of the test's, and the manager option that takes its changes.
func eventsOn(t *testing.T) (*cloudchange.Hub, func(*operator.Options)) {
	hub := cloudchange.NewHub(cloudchange.HubOptions{ResyncInterval: 2 * time.Hour, HealthEvery: 20 * time.Millisecond})
	src := cloudchangetest.NewSource(t.Name())
	return hub, func(o *operator.Options) {
		o.Events = operator.EventsOptions{Hub: hub, Sources: []operator.EventSource{operator.BuiltSource(src)}}
	}
}

// TestAPolicyOnTheWritePathStopsAtOnce: Azure Policy's modify effect sets
// cost-center on every write of the disk. The policy's first write comes
// back with the policy's value, so it is not written again: 1 write, not
// the first and 3 put-backs, and the Conflict names the policy.
func TestAPolicyOnTheWritePathStopsAtOnce(t *testing.T) {
	disks := newAzureDisks(t)
	h := newHarness(t, azureOn(disks.env))
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	d0 := disks.create("d0", nil)
	if err := disks.env.Server.AddPolicy(armsim.Policy{Name: "cost", Scope: d0, Effect: armsim.PolicyModify,
		Tags: map[string]string{"cost-center": "from-policy"}}); err != nil {
		t.Fatal(err)
	}
	h.claimVolume(shop, "data", nil, csi("disk.csi.azure.com", d0))
	p := h.policy("costs", v1alpha1.ProviderAzure, tag("cost-center", "${namespace.labels['cost-center']}"))
	h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged) // the write succeeded
	h.pass(p)
	got := h.waitReady(p.Name, metav1.ConditionFalse, workloadtags.ReasonPartiallyTagged)
	h.pass(p)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionConflict); c == nil || c.Reason != workloadtags.ReasonFighting ||
		!strings.Contains(c.Message, "Azure Policy's modify") {
		t.Errorf("Conflict = %+v, want Fighting naming the policy on the write path", c)
	}
	n := 0
	for _, r := range h.records() {
		if r.Resource == d0 && r.Result == audit.ResultOK {
			n++
		}
	}
	if n != 1 || disks.tags(d0)["cost-center"] != "from-policy" {
		t.Errorf("%d writes, cost-center=%q; want 1 write and the policy's value standing", n, disks.tags(d0)["cost-center"])
	}
}
