package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	tagging "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	taggingtypes "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/types"
	"github.com/aws/smithy-go"

	"github.com/tagsync/tagsync/internal/testenv"
)

// awsRulesMoto is the moto of TestAWSRules, which every rule's subtest
// shares (each works on resources of its own).
var awsRulesMoto *testenv.Moto

// ruleClients returns a config through the rules (URL) and one to moto
// alone (Direct), neither retrying, so a refusal is seen as it is.
func ruleClients(m *testenv.Moto) (through, direct aws.Config) {
	through, direct = m.Config.Copy(), m.Config.Copy()
	through.RetryMaxAttempts, direct.RetryMaxAttempts = 1, 1
	direct.BaseEndpoint = aws.String(m.Direct)
	return through, direct
}

// wantCode fails unless err is an AWS API error with code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != code {
		t.Fatalf("%s through the rules: err = %v, want %s", what, err, code)
	}
}

// wantMotoAccepts fails unless moto alone took the call.
func wantMotoAccepts(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s on moto alone: %v; the rule's test needs moto to accept it", what, err)
	}
}

// fakeInstanceIDs returns n instance IDs moto never started.
func fakeInstanceIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("i-%017x", 0xf00000+i)
	}
	return ids
}

// TestAWSRules shows, for each rule of the AWS limits in front of moto,
// that moto alone (Direct) takes a call the rules refuse as AWS does.
func TestAWSRules(t *testing.T) {
	awsRulesMoto = testenv.StartMoto(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	through, direct := ruleClients(awsRulesMoto)
	ec2Through, ec2Direct := ec2.NewFromConfig(through), ec2.NewFromConfig(direct)
	vpc, err := ec2Through.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.9.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	vpcID := aws.ToString(vpc.Vpc.VpcId)
	tagVPC := func(c *ec2.Client, key, value string) error {
		_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{vpcID},
			Tags: []ec2types.Tag{{Key: aws.String(key), Value: aws.String(value)}}})
		return err
	}

	t.Run("FilterValues", func(t *testing.T) {
		in := func() *ec2.DescribeInstancesInput {
			return &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: fakeInstanceIDs(testenv.MaxEC2FilterValues + 1)}}}
		}
		_, err := ec2Through.DescribeInstances(ctx, in())
		wantCode(t, "DescribeInstances with 201 filter values", err, "FilterLimitExceeded")
		_, err = ec2Direct.DescribeInstances(ctx, in())
		wantMotoAccepts(t, "DescribeInstances with 201 filter values", err)
		ok := in()
		ok.Filters[0].Values = ok.Filters[0].Values[:testenv.MaxEC2FilterValues]
		if _, err := ec2Through.DescribeInstances(ctx, ok); err != nil {
			t.Fatalf("DescribeInstances with 200 filter values through the rules: %v", err)
		}
	})

	t.Run("FilterValueLength", func(t *testing.T) {
		in := func(n int) *ec2.DescribeInstancesInput {
			return &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:k"), Values: []string{strings.Repeat("v", n)}}}}
		}
		_, err := ec2Through.DescribeInstances(ctx, in(testenv.MaxEC2FilterValueLength+1))
		wantCode(t, "DescribeInstances with a 256-character filter value", err, "FilterLimitExceeded")
		_, err = ec2Direct.DescribeInstances(ctx, in(testenv.MaxEC2FilterValueLength+1))
		wantMotoAccepts(t, "DescribeInstances with a 256-character filter value", err)
		if _, err := ec2Through.DescribeInstances(ctx, in(testenv.MaxEC2FilterValueLength)); err != nil {
			t.Fatalf("DescribeInstances with a 255-character filter value through the rules: %v", err)
		}
	})

	t.Run("IDsPerCall", func(t *testing.T) {
		in := func() *ec2.DeleteTagsInput {
			return &ec2.DeleteTagsInput{Resources: fakeInstanceIDs(testenv.MaxEC2IDsPerCall + 1), Tags: []ec2types.Tag{{Key: aws.String("k")}}}
		}
		_, err := ec2Through.DeleteTags(ctx, in())
		wantCode(t, "DeleteTags on 1001 resources", err, "InvalidParameterValue")
		_, err = ec2Direct.DeleteTags(ctx, in())
		wantMotoAccepts(t, "DeleteTags on 1001 resources", err)
	})

	t.Run("TagKeyLength", func(t *testing.T) {
		long := strings.Repeat("k", testenv.MaxEC2TagKeyLength+1)
		wantCode(t, "CreateTags with a 128-character key", tagVPC(ec2Through, long, "v"), "InvalidParameterValue")
		wantMotoAccepts(t, "CreateTags with a 128-character key", tagVPC(ec2Direct, long, "v"))
		// 127 characters, multi-byte ones among them: characters count, not bytes.
		if err := tagVPC(ec2Through, strings.Repeat("é", testenv.MaxEC2TagKeyLength), "v"); err != nil {
			t.Fatalf("CreateTags with a 127-character key through the rules: %v", err)
		}
	})

	t.Run("TagValueLength", func(t *testing.T) {
		long := strings.Repeat("v", testenv.MaxEC2TagValueLength+1)
		wantCode(t, "CreateTags with a 257-character value", tagVPC(ec2Through, "k", long), "InvalidParameterValue")
		wantMotoAccepts(t, "CreateTags with a 257-character value", tagVPC(ec2Direct, "k", long))
		if err := tagVPC(ec2Through, "k", long[:testenv.MaxEC2TagValueLength]); err != nil {
			t.Fatalf("CreateTags with a 256-character value through the rules: %v", err)
		}
	})

	t.Run("AWSPrefix", func(t *testing.T) {
		wantCode(t, "CreateTags with key AWS:owner", tagVPC(ec2Through, "AWS:owner", "me"), "InvalidParameterValue")
		wantMotoAccepts(t, "CreateTags with key AWS:owner", tagVPC(ec2Direct, "AWS:owner", "me"))
		_, err := ec2Through.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{vpcID}, Tags: []ec2types.Tag{{Key: aws.String("AWS:owner")}}})
		wantCode(t, "DeleteTags of key AWS:owner", err, "InvalidParameterValue")
	})

	t.Run("AutoScalingTagsPerCall", func(t *testing.T) {
		asThrough, asDirect := autoscaling.NewFromConfig(through), autoscaling.NewFromConfig(direct)
		if _, err := ec2Through.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt-rules"),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-12c6146b"), InstanceType: ec2types.InstanceTypeT3Micro}}); err != nil {
			t.Fatal(err)
		}
		if _, err := asThrough.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("rules"),
			MinSize: aws.Int32(0), MaxSize: aws.Int32(1), AvailabilityZones: []string{testenv.MotoRegion + "a"},
			LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateName: aws.String("lt-rules"), Version: aws.String("$Latest")}}); err != nil {
			t.Fatal(err)
		}
		tags := func(n int, prefix string) *autoscaling.CreateOrUpdateTagsInput {
			in := &autoscaling.CreateOrUpdateTagsInput{}
			for i := range n {
				in.Tags = append(in.Tags, astypes.Tag{ResourceId: aws.String("rules"), ResourceType: aws.String("auto-scaling-group"),
					Key: aws.String(fmt.Sprintf("%s%02d", prefix, i)), Value: aws.String("v")})
			}
			return in
		}
		_, err := asThrough.CreateOrUpdateTags(ctx, tags(testenv.MaxTagsPerResource+1, "k"))
		wantCode(t, "CreateOrUpdateTags with 51 tags for one group", err, "ValidationError")
		_, err = asDirect.CreateOrUpdateTags(ctx, tags(testenv.MaxTagsPerResource+1, "k"))
		wantMotoAccepts(t, "CreateOrUpdateTags with 51 tags for one group", err)
		_, err = asThrough.CreateOrUpdateTags(ctx, tags(1, "aws:k"))
		wantCode(t, "CreateOrUpdateTags with key aws:k00", err, "InvalidParameterValue")
		_, err = asDirect.CreateOrUpdateTags(ctx, tags(1, "aws:k"))
		wantMotoAccepts(t, "CreateOrUpdateTags with key aws:k00", err)
		if _, err := asThrough.CreateOrUpdateTags(ctx, tags(testenv.MaxTagsPerResource, "j")); err != nil {
			t.Fatalf("CreateOrUpdateTags with 50 tags through the rules: %v", err)
		}
	})

	t.Run("InstanceNotFound", func(t *testing.T) {
		run, err := ec2Through.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String("ami-12c6146b"), MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
		if err != nil {
			t.Fatal(err)
		}
		live := aws.ToString(run.Instances[0].InstanceId)
		gone := fakeInstanceIDs(2)
		tag := func(c *ec2.Client, ids ...string) error {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids, Tags: []ec2types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
			return err
		}
		// The instance started a moment ago through the rules is known.
		if err := tag(ec2Through, live); err != nil {
			t.Fatalf("CreateTags on running %s through the rules: %v", live, err)
		}
		wantCode(t, "CreateTags on an instance that does not exist", tag(ec2Through, live, gone[0]), "InvalidInstanceID.NotFound")
		wantMotoAccepts(t, "CreateTags on an instance that does not exist", tag(ec2Direct, live, gone[0]))
		_, err = ec2Through.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: gone[:1], Tags: []ec2types.Tag{{Key: aws.String("k")}}})
		wantCode(t, "DeleteTags on an instance that does not exist", err, "InvalidInstanceID.NotFound")
		_, err = ec2Direct.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: gone[:1], Tags: []ec2types.Tag{{Key: aws.String("k")}}})
		wantMotoAccepts(t, "DeleteTags on an instance that does not exist", err)

		// DescribeInstances by ID fails the whole call, naming every
		// missing ID; by an instance-id filter it matches nothing.
		_, err = ec2Through.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: append([]string{live}, gone...)})
		wantCode(t, "DescribeInstances naming instances that do not exist", err, "InvalidInstanceID.NotFound")
		if !strings.Contains(err.Error(), gone[0]) || !strings.Contains(err.Error(), gone[1]) || strings.Contains(err.Error(), live) {
			t.Fatalf("DescribeInstances error %v: want it to name %v and not %s", err, gone, live)
		}
		out, err := ec2Through.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: gone}}})
		if err != nil || len(out.Reservations) != 0 {
			t.Fatalf("DescribeInstances filtered on missing IDs: %d reservations, %v; want none and no error", len(out.Reservations), err)
		}
	})

	t.Run("Throttling", func(t *testing.T) {
		if got := testenv.DefaultEC2Bucket("CreateTags", false); got != (testenv.EC2Bucket{Capacity: 100, Refill: 10}) {
			t.Errorf("CreateTags bucket = %+v, want AWS's 100 tokens refilled at 10/s", got)
		}
		if got := testenv.DefaultEC2Bucket("DescribeInstances", true); got != testenv.EC2UnfilteredBucket {
			t.Errorf("unfiltered DescribeInstances bucket = %+v, want %+v", got, testenv.EC2UnfilteredBucket)
		}
		if got := testenv.DefaultEC2Bucket("DescribeTags", false); got != testenv.EC2NonMutatingBucket {
			t.Errorf("DescribeTags bucket = %+v, want %+v", got, testenv.EC2NonMutatingBucket)
		}
		if got := testenv.DefaultEC2Bucket("CreateVpc", false); got != testenv.EC2MutatingBucket {
			t.Errorf("CreateVpc bucket = %+v, want %+v", got, testenv.EC2MutatingBucket)
		}
		awsRulesMoto.Rules.SetEC2Bucket("DescribeVpcs", testenv.EC2Bucket{Capacity: 3, Refill: 5})
		defer awsRulesMoto.Rules.ResetEC2Bucket("DescribeVpcs")
		describe := func(c *ec2.Client) error {
			_, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
			return err
		}
		var err error
		for i := 0; i < 10 && err == nil; i++ {
			err = describe(ec2Through)
		}
		wantCode(t, "DescribeVpcs past a bucket of 3", err, "RequestLimitExceeded")
		// The rules count what they answered, throttled calls apart (the
		// SDK retried some of them).
		calls := awsRulesMoto.Rules.Calls()
		ok := calls[testenv.AWSCall{AccessKey: testenv.MotoAccessKeyID, Op: "ec2:DescribeVpcs"}]
		throttled := calls[testenv.AWSCall{AccessKey: testenv.MotoAccessKeyID, Op: "ec2:DescribeVpcs", Error: "RequestLimitExceeded"}]
		if ok < 3 || throttled < 1 {
			t.Errorf("Calls counted %d DescribeVpcs answered and %d throttled, want at least 3 and 1 (all: %v)", ok, throttled, calls)
		}
		var re interface{ HTTPStatusCode() int }
		if !errors.As(err, &re) || re.HTTPStatusCode() != 503 {
			t.Errorf("RequestLimitExceeded with HTTP status %v, want 503", re)
		}
		for range 10 {
			wantMotoAccepts(t, "DescribeVpcs ten times at once", describe(ec2Direct))
		}
		// Other actions have buckets of their own.
		if _, err := ec2Through.DescribeTags(ctx, &ec2.DescribeTagsInput{}); err != nil {
			t.Fatalf("DescribeTags while DescribeVpcs is throttled: %v", err)
		}
		// The bucket refills.
		testenv.Eventually(t, 5*time.Second, "DescribeVpcs to pass again as its bucket refills", func() string {
			if err := describe(ec2Through); err != nil {
				return err.Error()
			}
			return ""
		})
	})

	t.Run("GetResourcesLimits", func(t *testing.T) {
		tagThrough, tagDirect := tagging.NewFromConfig(through), tagging.NewFromConfig(direct)
		values := make([]string, testenv.MaxTaggingFilterValues+1)
		for i := range values {
			values[i] = fmt.Sprintf("v%d", i)
		}
		filters := make([]taggingtypes.TagFilter, testenv.MaxTaggingTagFilters+1)
		for i := range filters {
			filters[i] = taggingtypes.TagFilter{Key: aws.String(fmt.Sprintf("k%d", i))}
		}
		arns := make([]string, testenv.MaxTaggingARNs+1)
		for i := range arns {
			arns[i] = fmt.Sprintf("arn:aws:ec2:%s:123456789012:instance/%s", testenv.MotoRegion, fakeInstanceIDs(len(arns))[i])
		}
		for _, c := range []struct {
			what string
			in   tagging.GetResourcesInput
		}{
			{"21 values in one tag filter", tagging.GetResourcesInput{TagFilters: []taggingtypes.TagFilter{{Key: aws.String("k"), Values: values}}}},
			{"51 tag filters", tagging.GetResourcesInput{TagFilters: filters}},
			{"ResourcesPerPage 101", tagging.GetResourcesInput{ResourcesPerPage: aws.Int32(testenv.MaxTaggingResourcesPerPage + 1)}},
			{"101 ARNs", tagging.GetResourcesInput{ResourceARNList: arns}},
			{"ARNs with a tag filter", tagging.GetResourcesInput{ResourceARNList: arns[:1], TagFilters: filters[:1]}},
		} {
			_, err := tagDirect.GetResources(ctx, &c.in)
			wantMotoAccepts(t, "GetResources with "+c.what, err)
			_, err = tagThrough.GetResources(ctx, &c.in)
			wantCode(t, "GetResources with "+c.what, err, "InvalidParameterException")
		}
		ok := tagging.GetResourcesInput{ResourcesPerPage: aws.Int32(testenv.MaxTaggingResourcesPerPage),
			TagFilters: []taggingtypes.TagFilter{{Key: aws.String("k"), Values: values[:testenv.MaxTaggingFilterValues]}}}
		if _, err := tagThrough.GetResources(ctx, &ok); err != nil {
			t.Fatalf("GetResources within the limits: %v", err)
		}
	})

	t.Run("TaggingWriteLimits", func(t *testing.T) {
		tagThrough, tagDirect := tagging.NewFromConfig(through), tagging.NewFromConfig(direct)
		arns := make([]string, testenv.MaxTaggingWriteARNs+1)
		for i := range arns {
			arns[i] = fmt.Sprintf("arn:aws:elasticfilesystem:%s:123456789012:file-system/fs-%08x", testenv.MotoRegion, i)
		}
		many := map[string]string{}
		for i := range testenv.MaxTaggingWriteTags + 1 {
			many[fmt.Sprintf("k%d", i)] = "v"
		}
		for _, c := range []struct {
			what string
			in   tagging.TagResourcesInput
		}{
			{"21 ARNs", tagging.TagResourcesInput{ResourceARNList: arns, Tags: map[string]string{"k": "v"}}},
			{"51 tags", tagging.TagResourcesInput{ResourceARNList: arns[:1], Tags: many}},
			{"a 129-character key", tagging.TagResourcesInput{ResourceARNList: arns[:1], Tags: map[string]string{strings.Repeat("k", testenv.MaxTaggingKeyLength+1): "v"}}},
			{"a 257-character value", tagging.TagResourcesInput{ResourceARNList: arns[:1], Tags: map[string]string{"k": strings.Repeat("v", testenv.MaxTaggingValueLength+1)}}},
			{"key aws:owner", tagging.TagResourcesInput{ResourceARNList: arns[:1], Tags: map[string]string{"aws:owner": "me"}}},
		} {
			_, err := tagDirect.TagResources(ctx, &c.in)
			wantMotoAccepts(t, "TagResources with "+c.what, err)
			_, err = tagThrough.TagResources(ctx, &c.in)
			wantCode(t, "TagResources with "+c.what, err, "InvalidParameterException")
		}
		_, err := tagThrough.UntagResources(ctx, &tagging.UntagResourcesInput{ResourceARNList: arns, TagKeys: []string{"k"}})
		wantCode(t, "UntagResources with 21 ARNs", err, "InvalidParameterException")
	})

	t.Run("TaggingWritesLoadBalancers", func(t *testing.T) {
		// moto's Tagging API answers "Service not yet supported" for
		// load balancers; the rules write them as AWS does, each failing
		// resource alone in FailedResourcesMap.
		tagThrough, tagDirect := tagging.NewFromConfig(through), tagging.NewFromConfig(direct)
		elbThrough := elbv2.NewFromConfig(through)
		subnets, err := ec2Through.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{
			Filters: []ec2types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}}})
		if err != nil || len(subnets.Subnets) < 2 {
			t.Fatalf("DescribeSubnets: %v", err)
		}
		lb, err := elbThrough.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{Name: aws.String("rules-lb"),
			Subnets: []string{aws.ToString(subnets.Subnets[0].SubnetId), aws.ToString(subnets.Subnets[1].SubnetId)}})
		if err != nil {
			t.Fatal(err)
		}
		id := aws.ToString(lb.LoadBalancers[0].LoadBalancerArn)
		gone := id[:len(id)-4] + "dead"
		in := &tagging.TagResourcesInput{ResourceARNList: []string{id, gone}, Tags: map[string]string{"team": "a"}}
		out, err := tagDirect.TagResources(ctx, in)
		if err != nil || len(out.FailedResourcesMap) != 2 {
			t.Fatalf("moto alone: TagResources of a load balancer = %v, %v; the rule's test needs moto to refuse it", out, err)
		}
		out, err = tagThrough.TagResources(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := out.FailedResourcesMap[gone]; !ok || len(out.FailedResourcesMap) != 1 || !strings.HasSuffix(string(f.ErrorCode), "NotFound") {
			t.Fatalf("FailedResourcesMap = %+v, want only %s, not found", out.FailedResourcesMap, gone)
		}
		got, err := elbThrough.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{id}})
		if err != nil || len(got.TagDescriptions) != 1 || len(got.TagDescriptions[0].Tags) != 1 || aws.ToString(got.TagDescriptions[0].Tags[0].Value) != "a" {
			t.Fatalf("DescribeTags = %+v, %v; want team=a", got, err)
		}
		// GetResources by ARN list answers those ARNs only (moto alone
		// answers every resource).
		read, err := tagThrough.GetResources(ctx, &tagging.GetResourcesInput{ResourceARNList: []string{id}})
		if err != nil || len(read.ResourceTagMappingList) != 1 || aws.ToString(read.ResourceTagMappingList[0].ResourceARN) != id {
			t.Fatalf("GetResources by ARN = %+v, %v; want %s alone", read, err, id)
		}
		if _, err := tagThrough.UntagResources(ctx, &tagging.UntagResourcesInput{ResourceARNList: []string{id}, TagKeys: []string{"team"}}); err != nil {
			t.Fatal(err)
		}
		got, err = elbThrough.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{id}})
		if err != nil || len(got.TagDescriptions[0].Tags) != 0 {
			t.Fatalf("after UntagResources: %+v, %v; want no tags", got, err)
		}
	})

	t.Run("TaggingIndexDelay", func(t *testing.T) {
		awsRulesMoto.Rules.SetTaggingIndexDelay(1500 * time.Millisecond)
		defer awsRulesMoto.Rules.SetTaggingIndexDelay(testenv.DefaultTaggingIndexDelay)
		tagThrough, tagDirect := tagging.NewFromConfig(through), tagging.NewFromConfig(direct)
		run, err := ec2Through.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String("ami-12c6146b"), MinCount: aws.Int32(3), MaxCount: aws.Int32(3),
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance,
				Tags: []ec2types.Tag{{Key: aws.String("stage"), Value: aws.String("old")}}}}})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, i := range run.Instances {
			ids = append(ids, aws.ToString(i.InstanceId))
		}
		// found lists the instances GetResources finds with stage=value,
		// two a page, checking the tags it reports.
		found := func(c *tagging.Client, value string) []string {
			var got []string
			p := tagging.NewGetResourcesPaginator(c, &tagging.GetResourcesInput{ResourcesPerPage: aws.Int32(2),
				ResourceTypeFilters: []string{"ec2:instance"},
				TagFilters:          []taggingtypes.TagFilter{{Key: aws.String("stage"), Values: []string{value}}}})
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				if err != nil {
					t.Fatalf("GetResources stage=%s: %v", value, err)
				}
				for _, m := range page.ResourceTagMappingList {
					if !slices.ContainsFunc(m.Tags, func(tag taggingtypes.Tag) bool {
						return aws.ToString(tag.Key) == "stage" && aws.ToString(tag.Value) == value
					}) {
						t.Fatalf("GetResources stage=%s returned %s with tags %v", value, aws.ToString(m.ResourceARN), m.Tags)
					}
					arn := aws.ToString(m.ResourceARN)
					if id := arn[strings.LastIndex(arn, "/")+1:]; slices.Contains(ids, id) {
						got = append(got, id)
					}
				}
			}
			slices.Sort(got)
			return got
		}
		slices.Sort(ids)
		if got := found(tagThrough, "old"); !slices.Equal(got, ids) {
			t.Fatalf("GetResources stage=old before any write = %v, want %v (tags given at launch are seen at once)", got, ids)
		}
		if _, err := ec2Through.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids,
			Tags: []ec2types.Tag{{Key: aws.String("stage"), Value: aws.String("new")}}}); err != nil {
			t.Fatal(err)
		}
		if got := found(tagDirect, "new"); !slices.Equal(got, ids) {
			t.Fatalf("moto alone: GetResources stage=new right after the write = %v, want %v", got, ids)
		}
		if got := found(tagThrough, "new"); len(got) != 0 {
			t.Fatalf("GetResources stage=new right after the write = %v, want none within the delay", got)
		}
		if got := found(tagThrough, "old"); !slices.Equal(got, ids) {
			t.Fatalf("GetResources stage=old right after the write = %v, want the tags as they were: %v", got, ids)
		}
		testenv.Eventually(t, 10*time.Second, "the write to reach GetResources after the delay", func() string {
			if got := found(tagThrough, "new"); !slices.Equal(got, ids) {
				return fmt.Sprintf("stage=new finds %v, want %v", got, ids)
			}
			if got := found(tagThrough, "old"); len(got) != 0 {
				return fmt.Sprintf("stage=old still finds %v", got)
			}
			return ""
		})
	})
}
