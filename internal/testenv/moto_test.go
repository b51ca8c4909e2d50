package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	tagging "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	taggingtypes "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/types"
	"github.com/aws/smithy-go"

	"github.com/tagsync/tagsync/internal/testenv"
)

// TestMotoEC2Tags proves moto_server serves the AWS SDK for Go v2 as the AWS
// tests need it: a VPC created with tags is found by the Resource Groups
// Tagging API filtered by one of them, one CreateTags call with several
// resource IDs tags all of them, and Reset forgets everything.
func TestMotoEC2Tags(t *testing.T) {
	m := testenv.StartMoto(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	ec2c := ec2.NewFromConfig(m.Config)
	// The tagging client is loaded the way production code loads its
	// configuration, aimed at moto by LoadOptions.
	cfg, err := config.LoadDefaultConfig(ctx, m.LoadOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	tagc := tagging.NewFromConfig(cfg)

	vpc, err := ec2c.CreateVpc(ctx, &ec2.CreateVpcInput{
		CidrBlock: aws.String("10.0.0.0/16"),
		TagSpecifications: []ec2types.TagSpecification{{
			ResourceType: ec2types.ResourceTypeVpc,
			Tags:         []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("platform")}},
		}},
	})
	if err != nil {
		t.Fatalf("creating a tagged VPC: %v", err)
	}
	vpcID := aws.ToString(vpc.Vpc.VpcId)

	got := taggedARNs(ctx, t, tagc, "team", "platform")
	want := []string{vpcARN(vpcID)}
	if !slices.Equal(got, want) {
		t.Fatalf("GetResources team=platform = %v, want %v", got, want)
	}

	// One CreateTags call for three more resources and the tagged VPC.
	var ids []string
	for _, cidr := range []string{"10.1.0.0/16", "10.2.0.0/16"} {
		out, err := ec2c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String(cidr)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, aws.ToString(out.Vpc.VpcId))
	}
	subnet, err := ec2c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(ids[0]), CidrBlock: aws.String("10.1.1.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	subnetID := aws.ToString(subnet.Subnet.SubnetId)
	all := append([]string{vpcID, subnetID}, ids...)
	if _, err := ec2c.CreateTags(ctx, &ec2.CreateTagsInput{
		Resources: all,
		Tags:      []ec2types.Tag{{Key: aws.String("env"), Value: aws.String("batch")}},
	}); err != nil {
		t.Fatalf("CreateTags on %v: %v", all, err)
	}

	tags, err := ec2c.DescribeTags(ctx, &ec2.DescribeTagsInput{Filters: []ec2types.Filter{
		{Name: aws.String("key"), Values: []string{"env"}},
		{Name: aws.String("value"), Values: []string{"batch"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var tagged []string
	for _, td := range tags.Tags {
		tagged = append(tagged, aws.ToString(td.ResourceId))
	}
	slices.Sort(tagged)
	slices.Sort(all)
	if !slices.Equal(tagged, all) {
		t.Fatalf("DescribeTags env=batch names %v, want all of %v", tagged, all)
	}

	want = []string{vpcARN(vpcID), vpcARN(ids[0]), vpcARN(ids[1]), "arn:aws:ec2:" + testenv.MotoRegion + ":" + testenv.MotoAccountID + ":subnet/" + subnetID}
	slices.Sort(want)
	// GetResources shows the write once its index has it
	// (DefaultTaggingIndexDelay).
	testenv.Eventually(t, 3*testenv.DefaultTaggingIndexDelay, "GetResources env=batch showing the write", func() string {
		if got := taggedARNs(ctx, t, tagc, "env", "batch"); !slices.Equal(got, want) {
			return fmt.Sprintf("GetResources env=batch = %v, want %v", got, want)
		}
		return ""
	})
	// CreateTags adds: the VPC keeps the tag it was created with.
	if got := taggedARNs(ctx, t, tagc, "team", "platform"); !slices.Equal(got, []string{vpcARN(vpcID)}) {
		t.Fatalf("after CreateTags, GetResources team=platform = %v, want the first VPC only", got)
	}

	if err := m.Reset(); err != nil {
		t.Fatal(err)
	}
	_, err = ec2c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{vpcID}})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidVpcID.NotFound" {
		t.Fatalf("DescribeVpcs %s after Reset: err = %v, want InvalidVpcID.NotFound", vpcID, err)
	}
}

// taggedARNs returns the sorted ARNs of the EC2 resources tagged key=value,
// read through the Resource Groups Tagging API, each checked to carry the
// tag.
func taggedARNs(ctx context.Context, t *testing.T, c *tagging.Client, key, value string) []string {
	t.Helper()
	var arns []string
	p := tagging.NewGetResourcesPaginator(c, &tagging.GetResourcesInput{
		ResourceTypeFilters: []string{"ec2"},
		TagFilters:          []taggingtypes.TagFilter{{Key: aws.String(key), Values: []string{value}}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("GetResources %s=%s: %v", key, value, err)
		}
		for _, r := range page.ResourceTagMappingList {
			if !slices.ContainsFunc(r.Tags, func(tag taggingtypes.Tag) bool {
				return aws.ToString(tag.Key) == key && aws.ToString(tag.Value) == value
			}) {
				t.Fatalf("GetResources %s=%s returned %s with tags %v", key, value, aws.ToString(r.ResourceARN), r.Tags)
			}
			arns = append(arns, aws.ToString(r.ResourceARN))
		}
	}
	slices.Sort(arns)
	return arns
}

func vpcARN(id string) string {
	return "arn:aws:ec2:" + testenv.MotoRegion + ":" + testenv.MotoAccountID + ":vpc/" + id
}
