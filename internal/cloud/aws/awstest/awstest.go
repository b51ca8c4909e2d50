// Package awstest is what tests outside the AWS provider need of it on
// moto (internal/testenv.StartMoto): a provider in moto's region, and EC2
// instances and load balancers carrying given tags to find and tag.
package awstest

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/testenv"
)

// Provider is an AWS provider on moto, in moto's region, with its own
// metrics registry and throttle gates, and opts.
func Provider(t testing.TB, moto *testenv.Moto, opts ...aws.Option) *aws.Provider {
	t.Helper()
	p, err := aws.NewProvider(t.Context(), aws.Config{Region: testenv.MotoRegion, Endpoint: moto.URL,
		AccessKeyID: testenv.MotoAccessKeyID, SecretAccessKey: testenv.MotoSecretAccessKey},
		append([]aws.Option{aws.WithRegisterer(prometheus.NewRegistry()), aws.WithThrottleGates(aws.NewThrottleGates())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// RunInstances starts n EC2 instances on moto carrying tags and returns
// their IDs.
func RunInstances(t testing.TB, moto *testenv.Moto, n int, tags map[string]string) []string {
	t.Helper()
	ids, err := seed.CreateInstances(t.Context(), moto.Config, testenv.MotoRegion, n, tags)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// Tags reads a resource's tags from moto: an EC2 resource by its ID, a
// load balancer or target group by its ARN.
func Tags(t testing.TB, moto *testenv.Moto, id string) map[string]string {
	t.Helper()
	tags := map[string]string{}
	if strings.HasPrefix(id, "arn:aws:elasticloadbalancing:") {
		out, err := elbv2.NewFromConfig(moto.Config).DescribeTags(t.Context(), &elbv2.DescribeTagsInput{ResourceArns: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range out.TagDescriptions {
			for _, tag := range d.Tags {
				tags[*tag.Key] = *tag.Value
			}
		}
		return tags
	}
	out, err := ec2.NewFromConfig(moto.Config).DescribeTags(t.Context(), &ec2.DescribeTagsInput{
		Filters: []ec2types.Filter{{Name: sdkaws.String("resource-id"), Values: []string{id}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range out.Tags {
		tags[*d.Key] = *d.Value
	}
	return tags
}

// lbNames numbers the load balancers LoadBalancers makes.
var lbNames atomic.Int64

// LoadBalancers creates n network load balancers on moto in the region's
// default subnets, carrying tags, and returns their ARNs.
func LoadBalancers(t testing.TB, moto *testenv.Moto, n int, tags map[string]string) []string {
	t.Helper()
	subnets, err := ec2.NewFromConfig(moto.Config).DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{
		Filters: []ec2types.Filter{{Name: sdkaws.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil || len(subnets.Subnets) < 2 {
		t.Fatalf("DescribeSubnets: %v", err)
	}
	var lbTags []elbv2types.Tag
	for k, v := range tags {
		lbTags = append(lbTags, elbv2types.Tag{Key: sdkaws.String(k), Value: sdkaws.String(v)})
	}
	var arns []string
	for range n {
		out, err := elbv2.NewFromConfig(moto.Config).CreateLoadBalancer(t.Context(), &elbv2.CreateLoadBalancerInput{
			Name: sdkaws.String(fmt.Sprintf("awstest-%d", lbNames.Add(1))), Type: elbv2types.LoadBalancerTypeEnumNetwork,
			Subnets: []string{sdkaws.ToString(subnets.Subnets[0].SubnetId), sdkaws.ToString(subnets.Subnets[1].SubnetId)},
			Tags:    lbTags,
		})
		if err != nil {
			t.Fatal(err)
		}
		arns = append(arns, sdkaws.ToString(out.LoadBalancers[0].LoadBalancerArn))
	}
	return arns
}
