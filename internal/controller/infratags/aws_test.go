package infratags_test

import (
	"fmt"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tagsync/tagsync/internal/testenv"
)

// TestShippingSchemaAWS: on AWS the user tags in the shipping
// Infrastructure's status reach every EC2 resource carrying the cluster's
// owned tag (kubernetes.io/cluster/<infraID>=owned), in one CreateTags.
func TestShippingSchemaAWS(t *testing.T) {
	t.Parallel()
	moto := testenv.StartMoto(t)
	h, provider := newHarnessWithAWS(t, moto, shippingCRD(t))
	const infraID = "aws-3c4d5"
	c := ec2.NewFromConfig(moto.Config)
	out, err := c.RunInstances(t.Context(), &ec2.RunInstancesInput{ImageId: sdkaws.String("ami-12c6146b"),
		MinCount: sdkaws.Int32(12), MaxCount: sdkaws.Int32(12), InstanceType: ec2types.InstanceTypeT3Micro,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance,
			Tags: []ec2types.Tag{{Key: sdkaws.String("kubernetes.io/cluster/" + infraID), Value: sdkaws.String("owned")}}}}})
	if err != nil {
		t.Fatal(err)
	}
	h.infrastructure(map[string]any{}, map[string]any{
		"infrastructureName": infraID,
		"platformStatus": map[string]any{"type": "AWS", "aws": map[string]any{
			"region": testenv.MotoRegion, "resourceTags": tagList("env", "prod", "team", "a")}},
	})
	eventually(t, "every instance tagged", func() string {
		for _, in := range out.Instances {
			d, err := c.DescribeTags(t.Context(), &ec2.DescribeTagsInput{Filters: []ec2types.Filter{
				{Name: sdkaws.String("resource-id"), Values: []string{*in.InstanceId}}}})
			if err != nil {
				return err.Error()
			}
			got := map[string]string{}
			for _, tg := range d.Tags {
				got[*tg.Key] = *tg.Value
			}
			if got["env"] != "prod" || got["team"] != "a" {
				return fmt.Sprintf("%s has %v", *in.InstanceId, got)
			}
		}
		return ""
	})
	if n := provider.Calls()["ec2:CreateTags"]; n != 1 {
		t.Errorf("%d CreateTags calls for 12 instances, want 1", n)
	}
	h.waitEvent("UserTagsApplied", "aws: user tags applied to 12 resources")
}
