package metadata_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/cloudchangetest"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// awsOwned is the AWS spelling of a cluster's owned tag.
func awsOwned(infra string) string { return "kubernetes.io/cluster/" + infra }

// TestAWSLifecycle runs a request on EC2 resources in moto: add to 30
// instances and volumes in one CreateTags call, an outside edit reverted,
// update, delete; the audit log has one line per resource and mutation.
func TestAWSLifecycle(t *testing.T) {
	moto := testenv.StartMoto(t)
	provider := awstest.Provider(t, moto)
	h := newHarness(t, provider)
	ec2c := ec2.NewFromConfig(moto.Config)
	ids := awstest.RunInstances(t, moto, 25, map[string]string{awsOwned("aws1"): "owned"})
	ids = append(ids, createVolumes(t, ec2c, 5, awsOwned("aws1"))...)
	stray := awstest.RunInstances(t, moto, 1, map[string]string{"unrelated": "owned"})[0]

	h.create(build.AWSMetadata("tags", build.Opcode(v1alpha1.OpcodeAdd), build.ResourceTags(map[string]v1alpha1.AWSTagValue{"env": "prod", "team": "a"})))
	cm := build.CloudMetadata("cm", build.Classifiers(map[string]string{awsOwned("aws1"): "owned"}), build.AWSRef("tags"))
	h.create(cm)
	got := h.waitReady("cm", metav1.ConditionTrue)
	if got.Status.Matched != int32(len(ids)) {
		t.Fatalf("matched %d, want %d", got.Status.Matched, len(ids))
	}
	for _, id := range ids {
		if tg := awstest.Tags(t, moto, id); tg["env"] != "prod" || tg["team"] != "a" {
			t.Errorf("%s has %v", id, tg)
		}
	}
	if tg := awstest.Tags(t, moto, stray); tg["env"] != "" {
		t.Errorf("an unclassified instance was tagged: %v", tg)
	}
	if n := provider.Calls()["ec2:CreateTags"]; n != 1 {
		t.Errorf("%d CreateTags calls for one change on %d resources, want 1", n, len(ids))
	}
	if n := len(h.auditRecords()); n != len(ids) {
		t.Errorf("%d audit records, want %d", n, len(ids))
	}
	h.waitCondition("AWSMetadata", v1alpha1.ConditionReady, metav1.ConditionTrue, metadata.ReasonApplied, func() (int64, []metav1.Condition) {
		o := h.awsStatus("tags")
		return o.Generation, o.Status.Conditions
	})

	// An outside edit of an owned tag is reverted.
	if _, err := ec2c.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: ids[:1],
		Tags: []ec2types.Tag{{Key: sdkaws.String("env"), Value: sdkaws.String("hacked")}}}); err != nil {
		t.Fatal(err)
	}
	// No event announces the edit: a pass sees it once GetResources does.
	eventually(t, "GetResources showing the edit", func() string {
		if !moto.Rules.TaggingShows(ids[0]) {
			return "not yet"
		}
		return ""
	})
	h.pass("cm")
	if v := awstest.Tags(t, moto, ids[0])["env"]; v != "prod" {
		t.Errorf("outside edit not reverted: env=%q", v)
	}

	// Update overwrites the value everywhere, in one more CreateTags call.
	aw := &v1alpha1.AWSMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "tags"}}
	before := provider.Calls()["ec2:CreateTags"]
	h.update(aw, func() {
		aw.Spec.Opcode, aw.Spec.ResourceTags = v1alpha1.OpcodeUpdate, map[string]v1alpha1.AWSTagValue{"env": "staging", "team": "a"}
	})
	eventually(t, "env=staging everywhere", func() string {
		for _, id := range ids {
			if v := awstest.Tags(t, moto, id)["env"]; v != "staging" {
				return fmt.Sprintf("%s has env=%s", id, v)
			}
		}
		return ""
	})
	if n := provider.Calls()["ec2:CreateTags"] - before; n != 1 {
		t.Errorf("%d CreateTags calls for the update, want 1", n)
	}

	// Delete removes the tag from every resource, in one DeleteTags call.
	h.update(aw, func() {
		aw.Spec.Opcode, aw.Spec.ResourceTags = v1alpha1.OpcodeDelete, map[string]v1alpha1.AWSTagValue{"team": ""}
	})
	approveDeletions(t, h, "cm") // team leaves every resource: a person approves
	h.waitReady("cm", metav1.ConditionTrue)
	eventually(t, "team deleted everywhere", func() string {
		for _, id := range ids {
			if v, ok := awstest.Tags(t, moto, id)["team"]; ok {
				return fmt.Sprintf("%s still has team=%s", id, v)
			}
		}
		return ""
	})
	if n := provider.Calls()["ec2:DeleteTags"]; n != 1 {
		t.Errorf("%d DeleteTags calls, want 1", n)
	}
}

// TestAWSLoadBalancersAreTagged: a request reaches the cluster's load
// balancers beside its EC2 resources (Elastic Load Balancing through the
// Tagging API, EC2 through CreateTags), and a key it no longer sets is
// deleted from both.
func TestAWSLoadBalancersAreTagged(t *testing.T) {
	moto := testenv.StartMoto(t)
	provider := awstest.Provider(t, moto)
	h := newHarness(t, provider)
	owned := map[string]string{awsOwned("lb1"): "owned"}
	lbs := awstest.LoadBalancers(t, moto, 3, owned)
	inst := awstest.RunInstances(t, moto, 2, owned)

	h.create(build.AWSMetadata("tags", build.Opcode(v1alpha1.OpcodeAdd), build.ResourceTags(map[string]v1alpha1.AWSTagValue{"env": "prod", "team": "a"})))
	h.create(build.CloudMetadata("cm", build.Classifiers(owned), build.AWSRef("tags")))
	if got := h.waitReady("cm", metav1.ConditionTrue); got.Status.Matched != int32(len(lbs)+len(inst)) {
		t.Fatalf("matched %d, want %d load balancers and instances", got.Status.Matched, len(lbs)+len(inst))
	}
	for _, id := range append(slices.Clone(lbs), inst...) {
		if tg := awstest.Tags(t, moto, id); tg["env"] != "prod" || tg["team"] != "a" {
			t.Errorf("%s has %v, want env=prod and team=a", id, tg)
		}
	}
	if n := provider.Calls()["tag:TagResources"]; n != 1 {
		t.Errorf("%d TagResources calls for 3 load balancers, want 1", n)
	}

	// A delete request removes team from every resource; it is a mass
	// deletion, so a person approves.
	aw := &v1alpha1.AWSMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "tags"}}
	h.update(aw, func() {
		aw.Spec.Opcode, aw.Spec.ResourceTags = v1alpha1.OpcodeDelete, map[string]v1alpha1.AWSTagValue{"team": ""}
	})
	approveDeletions(t, h, "cm")
	eventually(t, "team gone from every resource", func() string {
		for _, id := range append(slices.Clone(lbs), inst...) {
			if tg := awstest.Tags(t, moto, id); tg["team"] != "" || tg["env"] != "prod" {
				return fmt.Sprintf("%s has %v", id, tg)
			}
		}
		return ""
	})
	if n := provider.Calls()["tag:UntagResources"]; n != 1 {
		t.Errorf("%d UntagResources calls for 3 load balancers, want 1", n)
	}
}

// TestMistypedRegionBacksOff: a region that does not exist (us-esat-1) is
// a PermanentError, reported once (one event) and not searched again
// every 30 s as a transient error is; correcting the region retries at
// once and applies.
func TestMistypedRegionBacksOff(t *testing.T) {
	moto := testenv.StartMoto(t)
	provider := awstest.Provider(t, moto)
	h := newHarness(t, provider)
	id := awstest.RunInstances(t, moto, 1, map[string]string{awsOwned("aws1"): "owned"})[0]
	aw := build.AWSMetadata("tags", build.Opcode(v1alpha1.OpcodeUpdate), build.ResourceTags(map[string]v1alpha1.AWSTagValue{"env": "prod"}),
		build.Regions("us-esat-1"))
	h.create(aw)
	h.create(build.CloudMetadata("cm", build.Classifiers(map[string]string{awsOwned("aws1"): "owned"}), build.AWSRef("tags")))
	eventually(t, "Request=False PermanentError", func() string {
		c := meta.FindStatusCondition(h.awsStatus("tags").Status.Conditions, v1alpha1.ConditionRequest)
		if c == nil || c.Reason != v1alpha1.ReasonPermanentError {
			return fmt.Sprintf("Request = %+v", c)
		}
		return ""
	})
	if c := meta.FindStatusCondition(h.waitReady("cm", metav1.ConditionFalse).Status.Conditions, v1alpha1.ConditionReady); c.Reason != v1alpha1.ReasonPermanentError {
		t.Errorf("CloudMetadata Ready = %+v, want reason %s", c, v1alpha1.ReasonPermanentError)
	}
	// A pass asks for the next after syncEvery (the default 10m), doubling
	// up to 30m, not after the 30 s of a transient error: a second
	// reconciler on the same objects (and the manager's cache), called
	// directly.
	r := metadata.NewReconciler(h.cached, cloud.Providers{"aws": provider}, events.NewFakeRecorder(100), nil, nil)
	for _, want := range []time.Duration{10 * time.Minute, 20 * time.Minute, 30 * time.Minute} {
		testenv.Reconcile(h.ctx, t, r, client.ObjectKey{Namespace: h.ns, Name: "cm"}).Requeue(want, want)
	}
	if n := h.countEvents(v1alpha1.ReasonPermanentError, "tags"); n != 1 {
		t.Errorf("%d PermanentError events, want 1", n)
	}
	h.update(aw, func() { aw.Spec.Regions = []string{testenv.MotoRegion} })
	eventually(t, "env=prod on the instance once the region is corrected", func() string {
		if tg := awstest.Tags(t, moto, id); tg["env"] != "prod" {
			return fmt.Sprintf("%s has %v", id, tg)
		}
		return ""
	})
	h.waitReady("cm", metav1.ConditionTrue)
}

// awsStatus reads an AWSMetadata.
func (h *harness) awsStatus(name string) *v1alpha1.AWSMetadata {
	h.t.Helper()
	return read(h, name, &v1alpha1.AWSMetadata{})
}

// createVolumes creates n volumes carrying the tag name=owned.
func createVolumes(t *testing.T, c *ec2.Client, n int, name string) []string {
	t.Helper()
	var ids []string
	for range n {
		out, err := c.CreateVolume(t.Context(), &ec2.CreateVolumeInput{AvailabilityZone: sdkaws.String(testenv.MotoRegion + "a"), Size: sdkaws.Int32(8),
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeVolume,
				Tags: []ec2types.Tag{{Key: sdkaws.String(name), Value: sdkaws.String("owned")}}}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, *out.VolumeId)
	}
	return ids
}

// TestAWSChangesCarryingTagsNeedNoRead: on AWS a change of a matched EC2
// instance carries its whole tag set, so its targeted pass classifies and
// diffs it without a call: an outside edit costs one CreateTags and
// nothing else, a burst of 100 changes of two instances one pass and one
// CreateTags, and tagsync's own write, a duplicate and a change of an
// unrelated instance no call at all. A change without tags runs a full
// pass (AWS has no read by ID).
func TestAWSChangesCarryingTagsNeedNoRead(t *testing.T) {
	moto := testenv.StartMoto(t)
	provider := awstest.Provider(t, moto)
	h, hub, _ := newEventsHarness(t, provider)
	ec2c := ec2.NewFromConfig(moto.Config)
	const name = "evt-aws"
	ids := awstest.RunInstances(t, moto, 3, map[string]string{awsOwned(name): "owned"})
	stray := awstest.RunInstances(t, moto, 1, map[string]string{"unrelated": "owned"})[0]
	h.create(build.AWSMetadata(name+"-tags", build.Opcode(v1alpha1.OpcodeAdd), build.ResourceTags(map[string]v1alpha1.AWSTagValue{"env": "prod"})))
	h.create(build.CloudMetadata(name, build.Classifiers(map[string]string{awsOwned(name): "owned"}), build.AWSRef(name+"-tags")))
	h.waitReady(name, metav1.ConditionTrue)
	arn := func(id string) string {
		return fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", testenv.MotoRegion, testenv.MotoAccountID, id)
	}
	hack := func(ids ...string) {
		if _, err := ec2c.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: ids,
			Tags: []ec2types.Tag{{Key: sdkaws.String("env"), Value: sdkaws.String("hacked")}}}); err != nil {
			t.Fatal(err)
		}
	}
	// change is EventBridge's change of id, carrying its tags as they are.
	change := func(id, eventID string) cloudchange.Change {
		return cloudchangetest.Write("aws", arn(id), eventID, awstest.Tags(t, moto, id))
	}
	targeted := func() float64 {
		return testenv.Counter(t, "tagsync_metadata_targeted_passes_total", map[string]string{"namespace": h.ns, "cloudmetadata": name})
	}
	// publish delivers changes and returns the AWS calls and targeted
	// passes they caused.
	publish := func(changes ...cloudchange.Change) (map[string]int, float64) {
		t.Helper()
		before, passes := provider.Calls(), targeted()
		if err := cloudchangetest.Publish(t, hub, waitFor, changes...); err != nil {
			t.Fatal(err)
		}
		calls := map[string]int{}
		for op, n := range provider.Calls() {
			if n > before[op] {
				calls[op] = n - before[op]
			}
		}
		return calls, targeted() - passes
	}

	// lastWrite is when the latest audited write of id ended.
	lastWrite := func(id string) time.Time {
		var at time.Time
		for _, r := range h.auditRecords() {
			if strings.HasSuffix(r.Resource, id) && r.Time.After(at) {
				at = r.Time
			}
		}
		return at
	}
	// burst hacks ids, then returns 50 changes of each.
	burst := func(ids ...string) []cloudchange.Change {
		hack(ids...)
		var out []cloudchange.Change
		for i := range 50 {
			for _, id := range ids {
				out = append(out, change(id, fmt.Sprintf("burst-%d-%s", i, id)))
			}
		}
		return out
	}
	for _, step := range []struct {
		what    string
		changes func() []cloudchange.Change
		calls   map[string]int
		passes  float64
	}{
		{"an outside edit", func() []cloudchange.Change { hack(ids[0]); return []cloudchange.Change{change(ids[0], "edit")} },
			map[string]int{"ec2:CreateTags": 1}, 1},
		{"a burst of 100 changes of two instances", func() []cloudchange.Change { return burst(ids[1:]...) }, map[string]int{"ec2:CreateTags": 1}, 1},
		// EventBridge times have whole seconds: the echo of the revert says
		// the second of the write (or the one before), not after it.
		{"tagsync's own write, its time in whole seconds", func() []cloudchange.Change {
			c := change(ids[0], "own-write-s")
			c.Time = lastWrite(ids[0]).Truncate(time.Second)
			return []cloudchange.Change{c}
		}, map[string]int{}, 1},
		{"tagsync's own write", func() []cloudchange.Change { return []cloudchange.Change{change(ids[0], "own-write")} }, map[string]int{}, 1},
		{"a duplicate", func() []cloudchange.Change { return []cloudchange.Change{change(ids[0], "own-write")} }, map[string]int{}, 0},
		{"a change of an unrelated instance", func() []cloudchange.Change { return []cloudchange.Change{change(stray, "unrelated")} }, map[string]int{}, 0},
		// Without tags AWS has no read by ID: a full pass (one discovery).
		{"a change without tags", func() []cloudchange.Change {
			return []cloudchange.Change{cloudchangetest.Write("aws", arn(ids[0]), "no-tags", nil)}
		},
			map[string]int{"tag:GetResources": 1}, 0},
	} {
		calls, passes := publish(step.changes()...)
		if !maps.Equal(calls, step.calls) || passes != step.passes {
			t.Errorf("%s: AWS calls %v, %v targeted passes; want %v, %v", step.what, calls, passes, step.calls, step.passes)
		}
		for _, id := range ids {
			if v := awstest.Tags(t, moto, id)["env"]; v != "prod" {
				t.Errorf("%s: %s has env=%q, want prod", step.what, id, v)
			}
		}
	}
}

// TestAWSANewlyClassifiedInstanceIsTaggedDespiteIndexLag: the Tagging API
// shows a tag write 30 s after it (the tail of its eventual consistency).
// An instance gains the classifier and its EventBridge change, carrying its
// tags, arrives: the full pass it brings does not find the instance through
// GetResources yet, so it takes the instance as the change describes it and
// tags it at once, not at the next full pass (2 h here).
func TestAWSANewlyClassifiedInstanceIsTaggedDespiteIndexLag(t *testing.T) {
	moto := testenv.StartMoto(t)
	provider := awstest.Provider(t, moto)
	h, hub, _ := newEventsHarness(t, provider)
	const name = "evt-awslag"
	awstest.RunInstances(t, moto, 1, map[string]string{awsOwned(name): "owned"})
	late := awstest.RunInstances(t, moto, 1, map[string]string{"unrelated": "x"})[0]
	h.create(build.AWSMetadata(name+"-tags", build.Opcode(v1alpha1.OpcodeAdd), build.ResourceTags(map[string]v1alpha1.AWSTagValue{"env": "prod"})))
	h.create(build.CloudMetadata(name, build.Classifiers(map[string]string{awsOwned(name): "owned"}), build.AWSRef(name+"-tags")))
	h.waitReady(name, metav1.ConditionTrue)

	moto.Rules.SetTaggingIndexDelay(30 * time.Second)
	if _, err := ec2.NewFromConfig(moto.Config).CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{late},
		Tags: []ec2types.Tag{{Key: sdkaws.String(awsOwned(name)), Value: sdkaws.String("owned")}}}); err != nil {
		t.Fatal(err)
	}
	arn := fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", testenv.MotoRegion, testenv.MotoAccountID, late)
	start := time.Now()
	if err := cloudchangetest.Publish(t, hub, waitFor, cloudchangetest.Write("aws", arn, "late-classified", awstest.Tags(t, moto, late))); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if moto.Rules.TaggingShows(late) {
		t.Fatalf("GetResources shows the classifier after %v: the test needs it not to", took)
	}
	if v := awstest.Tags(t, moto, late)["env"]; v != "prod" {
		t.Fatalf("env=%q on the newly classified instance %v after its change, while GetResources does not show it yet; want prod", v, took)
	}
	if took > 10*time.Second {
		t.Errorf("the change took %v to be served, want seconds", took)
	}
	if n := provider.Calls()["ec2:CreateTags"]; n != 2 {
		t.Errorf("%d CreateTags calls, want 2 (the first pass and the new instance)", n)
	}
	t.Logf("newly classified instance tagged %v after its change with a 30 s index delay", took)
}

// TestAWSThrottlingSlowsPassesAndFailsNone: with EC2's CreateTags bucket
// shrunk to one token refilled every second, the writes of four CloudMetadata
// objects (one CreateTags each, at once) are throttled as EC2 throttles
// them. The writes wait at the provider's throttle gate and are sent again
// instead of failing: every instance is tagged, and no pass counts as
// partial (resources it failed to write). A first pass may still count as
// error when the CloudMetadata reaches the cache before its AWSMetadata
// (a reference not found yet): that is no write's doing.
// No write fails: the controller's audit log has no failed write; a write
// its gate held (the throttling went on for longer than a write waits) is
// recorded as not sent, and a later pass sends it.
func TestAWSThrottlingSlowsPassesAndFailsNone(t *testing.T) {
	moto := testenv.StartMoto(t)
	moto.Rules.SetEC2Bucket("CreateTags", testenv.EC2Bucket{Capacity: 1, Refill: 1})
	t.Cleanup(func() { moto.Rules.ResetEC2Bucket("CreateTags") })
	h := newHarness(t, awstest.Provider(t, moto))
	start := time.Now()
	want := map[string]string{}
	for i := range 4 {
		infra, name := fmt.Sprintf("throttled%d", i), fmt.Sprintf("team-%d", i)
		for _, id := range awstest.RunInstances(t, moto, 2, map[string]string{awsOwned(infra): "owned"}) {
			want[id] = name
		}
		h.create(build.AWSMetadata(name, build.Opcode(v1alpha1.OpcodeAdd), build.ResourceTags(map[string]v1alpha1.AWSTagValue{"team": name})))
		h.create(build.CloudMetadata(infra, build.Classifiers(map[string]string{awsOwned(infra): "owned"}), build.AWSRef(name)))
	}
	// Concurrent throttled answers double the gate's wait (5 s, 10 s, ...).
	testenv.Eventually(t, 3*time.Minute, "every instance tagged", func() string {
		for id, team := range want {
			if got := awstest.Tags(t, moto, id)["team"]; got != team {
				return fmt.Sprintf("%s has team=%q, want %q", id, got, team)
			}
		}
		return ""
	})
	throttled := moto.Rules.Count("ec2:CreateTags", "RequestLimitExceeded")
	if throttled == 0 {
		t.Fatal("no CreateTags was throttled: the test shows nothing")
	}
	// A partial pass is one whose write of a resource failed: each failed
	// write has its audit record. (The passes_total metric is the
	// process's, shared with the tests that run beside this one.)
	held := 0
	for _, r := range h.auditRecords() {
		switch r.Result {
		case audit.ResultError:
			t.Errorf("%d CreateTags throttled: the write of %s failed: %+v", throttled, r.Resource, r)
		case audit.ResultNotSent:
			held++
		}
	}
	t.Logf("%d CreateTags answered RequestLimitExceeded, %d resource writes held unsent; every instance tagged after %v", throttled, held, time.Since(start))
}
