package testenv_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	tagging "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/tagsync/tagsync/internal/testenv"
)

// received is one EventBridge event as the queue gave it.
type received struct {
	ID         string `json:"id"`
	DetailType string `json:"detail-type"`
	Source     string `json:"source"`
	Resources  []string
	Detail     struct {
		ChangedTagKeys []string          `json:"changed-tag-keys"`
		Version        int               `json:"version"`
		Tags           map[string]string `json:"tags"`
		EventName      string            `json:"eventName"`
		UserIdentity   struct {
			ARN string `json:"arn"`
		} `json:"userIdentity"`
		RequestParameters json.RawMessage `json:"requestParameters"`
	} `json:"detail"`
}

// drain receives the queue's messages until want have come (or fails).
func drain(t *testing.T, moto *testenv.Moto, queue string, want int) []received {
	t.Helper()
	c := sqs.NewFromConfig(moto.Config)
	var out []received
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%d events on the queue", want), func() string {
		got, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &queue, MaxNumberOfMessages: 10})
		if err != nil {
			return err.Error()
		}
		for _, m := range got.Messages {
			var e received
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &e); err != nil {
				t.Fatalf("an event that is not JSON: %v", err)
			}
			out = append(out, e)
			if _, err := c.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: &queue, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		if len(out) < want {
			return fmt.Sprintf("%d events", len(out))
		}
		return ""
	})
	return out
}

// newQueue creates an SQS queue on moto and returns its URL.
func newQueue(t *testing.T, moto *testenv.Moto, name string) string {
	t.Helper()
	out, err := sqs.NewFromConfig(moto.Config).CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: &name})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

// TestEventsOfTagWrites: 20 CreateTags of one volume through the rules
// reach the queue as 20 tag changes (each with the volume's whole tag set
// and its version) and 20 CloudTrail calls naming the caller's identity;
// with Duplicates and MaxDelay some come twice with the same id and some
// out of order, as EventBridge and SQS deliver them.
func TestEventsOfTagWrites(t *testing.T) {
	moto := testenv.StartMoto(t)
	moto.Rules.SetTaggingIndexDelay(0)
	queue := newQueue(t, moto, "events")
	stop := moto.Rules.DeliverEvents(testenv.EventDelivery{QueueURL: queue, Duplicates: 0.5, MaxDelay: 500 * time.Millisecond, Seed: 7})
	defer stop()
	moto.Rules.SetIdentity(testenv.MotoAccessKeyID, testenv.RoleIdentity("tagsync"))
	c := ec2.NewFromConfig(moto.Config)
	vol, err := c.CreateVolume(t.Context(), &ec2.CreateVolumeInput{AvailabilityZone: aws.String(testenv.MotoRegion + "a"), Size: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	const writes = 20
	for i := range writes {
		if _, err := c.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{*vol.VolumeId},
			Tags: []ec2types.Tag{{Key: aws.String("n"), Value: aws.String(fmt.Sprint(i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	sent, dups := 0, 0
	testenv.Eventually(t, 30*time.Second, "every event sent", func() string {
		var pending int
		if sent, dups, pending = moto.Rules.EventsDelivered(); pending > 0 || sent < 2*writes+dups {
			return fmt.Sprintf("%d sent, %d of them duplicates, %d waiting", sent, dups, pending)
		}
		return ""
	})
	events := drain(t, moto, queue, sent)
	ids := map[string]int{}
	var versions []int
	calls := 0
	for _, e := range events {
		ids[e.ID]++
		switch e.DetailType {
		case "Tag Change on Resource":
			want := fmt.Sprintf("arn:aws:ec2:%s:%s:volume/%s", testenv.MotoRegion, testenv.MotoAccountID, *vol.VolumeId)
			if len(e.Resources) != 1 || e.Resources[0] != want || fmt.Sprint(e.Detail.Tags["n"]) != fmt.Sprint(e.Detail.Version-1) ||
				!slices.Equal(e.Detail.ChangedTagKeys, []string{"n"}) {
				t.Errorf("tag change %+v, want %s's version n+1 carrying n", e, want)
			}
			versions = append(versions, e.Detail.Version)
		case "AWS API Call via CloudTrail":
			calls++
			if e.Source != "aws.ec2" || e.Detail.EventName != "CreateTags" || e.Detail.UserIdentity.ARN != testenv.RoleIdentity("tagsync").ARN {
				t.Errorf("call %+v, want aws.ec2 CreateTags by the tagsync role", e)
			}
		}
	}
	if len(ids) != 2*writes {
		t.Errorf("%d distinct events, want %d", len(ids), 2*writes)
	}
	// (More than sent arrive only when the SDK retried a send SQS had taken.)
	if dups == 0 || len(events) < 2*writes+dups {
		t.Errorf("%d events received, %d duplicates sent; want some duplicates among %d", len(events), dups, 2*writes)
	}
	if slices.IsSorted(versions) {
		t.Errorf("tag changes in version order %v; with delays up to 500ms some come out of order", versions)
	}
}

// TestStripper: a stripper on a load balancer (as the AWS Load Balancer
// Controller) removes what another caller's TagResources added before the
// answer comes back, keeping its own keys; its RemoveTags is delivered as
// a tag change and a CloudTrail call naming its role, each call from its
// service's EventBridge source (the Tagging API's is aws.tagging).
func TestStripper(t *testing.T) {
	moto := testenv.StartMoto(t)
	moto.Rules.SetTaggingIndexDelay(0)
	queue := newQueue(t, moto, "strips")
	stop := moto.Rules.DeliverEvents(testenv.EventDelivery{QueueURL: queue})
	defer stop()
	subnets, err := ec2.NewFromConfig(moto.Config).DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{
		Filters: []ec2types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil || len(subnets.Subnets) < 2 {
		t.Fatalf("DescribeSubnets: %v", err)
	}
	lb, err := elbv2.NewFromConfig(moto.Config).CreateLoadBalancer(t.Context(), &elbv2.CreateLoadBalancerInput{Name: aws.String("web"),
		Type: elbv2types.LoadBalancerTypeEnumNetwork, Subnets: []string{*subnets.Subnets[0].SubnetId, *subnets.Subnets[1].SubnetId},
		Tags: []elbv2types.Tag{{Key: aws.String("elbv2.k8s.aws/cluster"), Value: aws.String("c1")}}})
	if err != nil {
		t.Fatal(err)
	}
	arn := *lb.LoadBalancers[0].LoadBalancerArn
	moto.Rules.SetIdentity("lbc", testenv.RoleIdentity("aws-load-balancer-controller"))
	remove := moto.Rules.AddStripper(testenv.AWSStripper{Resources: []string{arn}, Keep: []string{"elbv2.k8s.aws/cluster"}, AccessKey: "lbc"})

	out, err := tagging.NewFromConfig(moto.Config).TagResources(t.Context(), &tagging.TagResourcesInput{ResourceARNList: []string{arn},
		Tags: map[string]string{"cost-center": "cc-1"}})
	if err != nil || len(out.FailedResourcesMap) != 0 {
		t.Fatalf("TagResources: %v %v", out, err)
	}
	tags, err := elbv2.NewFromConfig(moto.Config).DescribeTags(t.Context(), &elbv2.DescribeTagsInput{ResourceArns: []string{arn}})
	if err != nil {
		t.Fatal(err)
	}
	if got := tags.TagDescriptions[0].Tags; len(got) != 1 || *got[0].Key != "elbv2.k8s.aws/cluster" {
		t.Errorf("the load balancer carries %v after the strip, want only elbv2.k8s.aws/cluster", got)
	}
	if n := remove(); n != 1 {
		t.Errorf("the stripper wrote %d times, want 1", n)
	}
	var seen []string
	for _, e := range drain(t, moto, queue, 4) {
		what := e.DetailType + " " + e.Detail.EventName
		if e.DetailType == "Tag Change on Resource" {
			what += fmt.Sprintf("%v %v", e.Detail.ChangedTagKeys, e.Detail.Tags)
		} else {
			what += " from " + e.Source + " by " + e.Detail.UserIdentity.ARN
		}
		seen = append(seen, what)
	}
	slices.Sort(seen)
	want := []string{
		"AWS API Call via CloudTrail RemoveTags from aws.elasticloadbalancing by " + testenv.RoleIdentity("aws-load-balancer-controller").ARN,
		fmt.Sprintf("AWS API Call via CloudTrail TagResources from aws.tagging by arn:aws:iam::%s:user/%s", testenv.MotoAccountID, testenv.MotoAccessKeyID),
		"Tag Change on Resource [cost-center] map[cost-center:cc-1 elbv2.k8s.aws/cluster:c1]",
		"Tag Change on Resource [cost-center] map[elbv2.k8s.aws/cluster:c1]",
	}
	if !slices.Equal(seen, want) {
		t.Errorf("events\n%v\nwant\n%v", seen, want)
	}
}

// TestValueWriterAndCallerIdentity: a writer of values (AWSStripper.Set)
// writes its value back, with EC2's CreateTags as its own identity, after
// another caller changed it, and removes nothing; STS's GetCallerIdentity
// answers each caller as the identity CloudTrail names it by.
func TestValueWriterAndCallerIdentity(t *testing.T) {
	moto := testenv.StartMoto(t)
	moto.Rules.SetIdentity("pipeline", testenv.RoleIdentity("terraform"))
	vol, err := ec2.NewFromConfig(moto.Config).CreateVolume(t.Context(), &ec2.CreateVolumeInput{AvailabilityZone: aws.String(testenv.MotoRegion + "a"), Size: aws.Int32(8)})
	if err != nil {
		t.Fatal(err)
	}
	volARN := fmt.Sprintf("arn:aws:ec2:%s:%s:volume/%s", testenv.MotoRegion, testenv.MotoAccountID, *vol.VolumeId)
	writes := moto.Rules.AddStripper(testenv.AWSStripper{Resources: []string{volARN}, AccessKey: "pipeline", Set: map[string]string{"cost-center": "cc-legacy"}})
	if _, err := ec2.NewFromConfig(moto.Config).CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{*vol.VolumeId},
		Tags: []ec2types.Tag{{Key: aws.String("cost-center"), Value: aws.String("cc-1")}, {Key: aws.String("team"), Value: aws.String("a")}}}); err != nil {
		t.Fatal(err)
	}
	out, err := ec2.NewFromConfig(moto.Config).DescribeTags(t.Context(), &ec2.DescribeTagsInput{
		Filters: []ec2types.Filter{{Name: aws.String("resource-id"), Values: []string{*vol.VolumeId}}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range out.Tags {
		got[*d.Key] = *d.Value
	}
	if fmt.Sprint(got) != "map[cost-center:cc-legacy team:a]" {
		t.Errorf("the volume carries %v, want the writer's cost-center back and team left", got)
	}
	if n := writes(); n != 1 {
		t.Errorf("the writer wrote %d times, want 1", n)
	}
	for key, want := range map[string]string{
		"pipeline":              testenv.RoleIdentity("terraform").ARN,
		testenv.MotoAccessKeyID: fmt.Sprintf("arn:aws:iam::%s:user/%s", testenv.MotoAccountID, testenv.MotoAccessKeyID),
	} {
		cfg := moto.Config.Copy()
		cfg.Credentials = credentials.NewStaticCredentialsProvider(key, "secret", "")
		id, err := sts.NewFromConfig(cfg).GetCallerIdentity(t.Context(), &sts.GetCallerIdentityInput{})
		if err != nil || aws.ToString(id.Arn) != want || aws.ToString(id.Account) != testenv.MotoAccountID {
			t.Errorf("GetCallerIdentity as %s: %v %v, want %s", key, id, err, want)
		}
	}
}
