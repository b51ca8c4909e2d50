// Package seed creates what AWS node sync tests and benchmarks need on
// moto (internal/testenv.StartMoto): Auto Scaling groups with their
// instances, instances in no group, and reads their tags back. It takes an aws.Config (moto's, or a copy
// with an HTTP client of the test's own) and does not depend on tagsync's
// provider, so the provider's own tests use it too.
package seed

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// AMI is one of the AMIs moto knows in every region.
const AMI = "ami-12c6146b"

// ProviderID is the providerID of a node on instance id in zone <region>a,
// where Group starts its instances.
func ProviderID(region, id string) string { return fmt.Sprintf("aws:///%sa/%s", region, id) }

// Group creates Auto Scaling group name of n instances in region, from a
// launch template of its own, tagged t with PropagateAtLaunch (so its
// instances carry t too), and returns the group's ARN and its instances'
// IDs, sorted.
func Group(tb testing.TB, cfg sdkaws.Config, region, name string, n int, t map[string]string) (string, []string) {
	tb.Helper()
	arn, ids, err := CreateGroup(tb.Context(), cfg, region, name, n, t)
	if err != nil {
		tb.Fatal(err)
	}
	return arn, ids
}

// CreateGroup is Group for callers without a testing.TB (benchmarks).
func CreateGroup(ctx context.Context, cfg sdkaws.Config, region, name string, n int, t map[string]string) (string, []string, error) {
	lt := "lt-" + name
	if _, err := ec2Client(cfg, region).CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: sdkaws.String(lt),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: sdkaws.String(AMI), InstanceType: ec2types.InstanceTypeT3Micro},
	}); err != nil {
		return "", nil, fmt.Errorf("CreateLaunchTemplate %s in %s: %w", lt, region, err)
	}
	var tl []astypes.Tag
	for k, v := range t {
		tl = append(tl, astypes.Tag{ResourceId: sdkaws.String(name), ResourceType: sdkaws.String("auto-scaling-group"),
			Key: sdkaws.String(k), Value: sdkaws.String(v), PropagateAtLaunch: sdkaws.Bool(true)})
	}
	c := asClient(cfg, region)
	if _, err := c.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{
		AutoScalingGroupName: sdkaws.String(name), MinSize: sdkaws.Int32(0), MaxSize: sdkaws.Int32(int32(n + 10)),
		DesiredCapacity: sdkaws.Int32(int32(n)), AvailabilityZones: []string{region + "a"},
		LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateName: sdkaws.String(lt), Version: sdkaws.String("$Latest")},
		Tags:           tl,
	}); err != nil {
		return "", nil, fmt.Errorf("CreateAutoScalingGroup %s in %s: %w", name, region, err)
	}
	out, err := c.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}})
	if err != nil || len(out.AutoScalingGroups) != 1 {
		return "", nil, fmt.Errorf("DescribeAutoScalingGroups %s: %d groups, %v", name, len(out.AutoScalingGroups), err)
	}
	g := out.AutoScalingGroups[0]
	return sdkaws.ToString(g.AutoScalingGroupARN), InstanceIDs(g), nil
}

// CreateInstances starts n EC2 instances in region, in no group, tagged t,
// and returns their IDs.
func CreateInstances(ctx context.Context, cfg sdkaws.Config, region string, n int, t map[string]string) ([]string, error) {
	in := &ec2.RunInstancesInput{ImageId: sdkaws.String(AMI), MinCount: sdkaws.Int32(int32(n)), MaxCount: sdkaws.Int32(int32(n)),
		InstanceType: ec2types.InstanceTypeT3Micro}
	if len(t) > 0 {
		spec := ec2types.TagSpecification{ResourceType: ec2types.ResourceTypeInstance}
		for k, v := range t {
			spec.Tags = append(spec.Tags, ec2types.Tag{Key: sdkaws.String(k), Value: sdkaws.String(v)})
		}
		in.TagSpecifications = []ec2types.TagSpecification{spec}
	}
	out, err := ec2Client(cfg, region).RunInstances(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("RunInstances in %s: %w", region, err)
	}
	ids := make([]string, len(out.Instances))
	for i, inst := range out.Instances {
		ids[i] = sdkaws.ToString(inst.InstanceId)
	}
	return ids, nil
}

// Resize sets the desired capacity of group name and returns its
// instances' IDs, sorted.
func Resize(tb testing.TB, cfg sdkaws.Config, region, name string, n int) []string {
	tb.Helper()
	if _, err := asClient(cfg, region).SetDesiredCapacity(tb.Context(), &autoscaling.SetDesiredCapacityInput{
		AutoScalingGroupName: sdkaws.String(name), DesiredCapacity: sdkaws.Int32(int32(n)),
	}); err != nil {
		tb.Fatalf("SetDesiredCapacity %s: %v", name, err)
	}
	return InstanceIDs(Describe(tb, cfg, region, name))
}

// Describe reads group name.
func Describe(tb testing.TB, cfg sdkaws.Config, region, name string) astypes.AutoScalingGroup {
	tb.Helper()
	out, err := asClient(cfg, region).DescribeAutoScalingGroups(tb.Context(), &autoscaling.DescribeAutoScalingGroupsInput{
		AutoScalingGroupNames: []string{name},
	})
	if err != nil || len(out.AutoScalingGroups) != 1 {
		tb.Fatalf("DescribeAutoScalingGroups %s: %d groups, %v", name, len(out.AutoScalingGroups), err)
	}
	return out.AutoScalingGroups[0]
}

// InstanceIDs are a group's instances' IDs, sorted.
func InstanceIDs(g astypes.AutoScalingGroup) []string {
	ids := make([]string, len(g.Instances))
	for i, in := range g.Instances {
		ids[i] = sdkaws.ToString(in.InstanceId)
	}
	slices.Sort(ids)
	return ids
}

// Tag is a tag of a group as Auto Scaling reports it.
type Tag struct {
	Value             string
	PropagateAtLaunch bool
}

// GroupTags reads group name's tags.
func GroupTags(tb testing.TB, cfg sdkaws.Config, region, name string) map[string]Tag {
	tb.Helper()
	out := map[string]Tag{}
	for _, t := range Describe(tb, cfg, region, name).Tags {
		out[sdkaws.ToString(t.Key)] = Tag{Value: sdkaws.ToString(t.Value), PropagateAtLaunch: sdkaws.ToBool(t.PropagateAtLaunch)}
	}
	return out
}

// SetGroupTags sets tags on group name (PropagateAtLaunch) and deletes
// the names in del, as someone would in the console.
func SetGroupTags(tb testing.TB, cfg sdkaws.Config, region, name string, set map[string]string, del ...string) {
	tb.Helper()
	if err := UpdateGroupTags(tb.Context(), cfg, region, name, set, del...); err != nil {
		tb.Fatal(err)
	}
}

// UpdateGroupTags is SetGroupTags outside a test: DeleteTags of del, then
// CreateOrUpdateTags of set (PropagateAtLaunch) on group name.
func UpdateGroupTags(ctx context.Context, cfg sdkaws.Config, region, name string, set map[string]string, del ...string) error {
	tag := func(k, v string) astypes.Tag {
		return astypes.Tag{ResourceId: sdkaws.String(name), ResourceType: sdkaws.String("auto-scaling-group"),
			Key: sdkaws.String(k), Value: sdkaws.String(v), PropagateAtLaunch: sdkaws.Bool(true)}
	}
	c := asClient(cfg, region)
	if len(del) > 0 {
		var tl []astypes.Tag
		for _, k := range del {
			tl = append(tl, tag(k, ""))
		}
		if _, err := c.DeleteTags(ctx, &autoscaling.DeleteTagsInput{Tags: tl}); err != nil {
			return fmt.Errorf("DeleteTags on %s: %w", name, err)
		}
	}
	if len(set) > 0 {
		var tl []astypes.Tag
		for k, v := range set {
			tl = append(tl, tag(k, v))
		}
		if _, err := c.CreateOrUpdateTags(ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: tl}); err != nil {
			return fmt.Errorf("CreateOrUpdateTags on %s: %w", name, err)
		}
	}
	return nil
}

// SetInstanceTags deletes the names in del from an EC2 instance, then sets
// set on it, as someone would in the console.
func SetInstanceTags(tb testing.TB, cfg sdkaws.Config, region, id string, set map[string]string, del ...string) {
	tb.Helper()
	c := ec2Client(cfg, region)
	if len(del) > 0 {
		var tl []ec2types.Tag
		for _, k := range del {
			tl = append(tl, ec2types.Tag{Key: sdkaws.String(k)})
		}
		if _, err := c.DeleteTags(tb.Context(), &ec2.DeleteTagsInput{Resources: []string{id}, Tags: tl}); err != nil {
			tb.Fatalf("DeleteTags on %s: %v", id, err)
		}
	}
	if len(set) > 0 {
		var tl []ec2types.Tag
		for k, v := range set {
			tl = append(tl, ec2types.Tag{Key: sdkaws.String(k), Value: sdkaws.String(v)})
		}
		if _, err := c.CreateTags(tb.Context(), &ec2.CreateTagsInput{Resources: []string{id}, Tags: tl}); err != nil {
			tb.Fatalf("CreateTags on %s: %v", id, err)
		}
	}
}

// InstanceTags reads an EC2 instance's tags, AWS's aws: tags included.
func InstanceTags(tb testing.TB, cfg sdkaws.Config, region, id string) map[string]string {
	tb.Helper()
	out, err := ec2Client(cfg, region).DescribeTags(tb.Context(), &ec2.DescribeTagsInput{
		Filters: []ec2types.Filter{{Name: sdkaws.String("resource-id"), Values: []string{id}}}})
	if err != nil {
		tb.Fatalf("DescribeTags %s: %v", id, err)
	}
	t := map[string]string{}
	for _, d := range out.Tags {
		t[sdkaws.ToString(d.Key)] = sdkaws.ToString(d.Value)
	}
	return t
}

// ec2Client is an EC2 client of region.
func ec2Client(cfg sdkaws.Config, region string) *ec2.Client {
	return ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region, o.Retryer = region, fixtureRetryer() })
}

// asClient is an Auto Scaling client of region.
func asClient(cfg sdkaws.Config, region string) *autoscaling.Client {
	return autoscaling.NewFromConfig(cfg, func(o *autoscaling.Options) { o.Region, o.Retryer = region, fixtureRetryer() })
}

// fixtureRetryer waits out throttling as infrastructure tooling does. The
// fidelity layer in front of moto throttles as EC2 does, so parallel tests
// that start instances faster than RunInstances' bucket refills (5 calls,
// 2 a second) are answered RequestLimitExceeded; building a fixture is no
// test of tagsync's throttling, so it retries (up to 30 attempts, at most
// 2 s apart, without the SDK's client-side retry quota).
func fixtureRetryer() sdkaws.Retryer {
	return retry.AddWithMaxAttempts(retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxBackoff = 2 * time.Second
		o.RateLimiter = ratelimit.None
	}), 30)
}
