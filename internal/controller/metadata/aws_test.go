package metadata_test

import (
	"fmt"
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
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/testenv"
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

	h.create(&v1alpha1.AWSMetadata{ObjectMeta: metav1.ObjectMeta{Name: "tags"},
		Spec: v1alpha1.AWSMetadataSpec{Opcode: v1alpha1.OpcodeAdd, ResourceTags: map[string]v1alpha1.AWSTagValue{"env": "prod", "team": "a"}}})
	cm := &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Spec: v1alpha1.CloudMetadataSpec{
		Classifiers:   map[string]string{awsOwned("aws1"): "owned"},
		CloudProvider: v1alpha1.CloudProviderRefs{AWSRef: &v1alpha1.LocalObjectRef{Name: "tags"}},
	}}
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

	// An outside edit of an owned tag is reverted.
	if _, err := ec2c.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: ids[:1],
		Tags: []ec2types.Tag{{Key: sdkaws.String("env"), Value: sdkaws.String("hacked")}}}); err != nil {
		t.Fatal(err)
	}
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

// TestMistypedRegionBacksOff: a region that does not exist (us-esat-1) is
// a PermanentError, reported once (one event) and not searched again
// every 30 s as a transient error is; correcting the region retries at
// once and applies.
func TestMistypedRegionBacksOff(t *testing.T) {
	moto := testenv.StartMoto(t)
	provider := awstest.Provider(t, moto)
	h := newHarness(t, provider)
	id := awstest.RunInstances(t, moto, 1, map[string]string{awsOwned("aws1"): "owned"})[0]
	aw := &v1alpha1.AWSMetadata{ObjectMeta: metav1.ObjectMeta{Name: "tags"}, Spec: v1alpha1.AWSMetadataSpec{
		Opcode: v1alpha1.OpcodeUpdate, ResourceTags: map[string]v1alpha1.AWSTagValue{"env": "prod"}, Regions: []string{"us-esat-1"}}}
	h.create(aw)
	h.create(&v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Spec: v1alpha1.CloudMetadataSpec{
		Classifiers:   map[string]string{awsOwned("aws1"): "owned"},
		CloudProvider: v1alpha1.CloudProviderRefs{AWSRef: &v1alpha1.LocalObjectRef{Name: "tags"}},
	}})
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
