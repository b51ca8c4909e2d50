// Package awstest is what tests outside the AWS provider need of it on
// moto (internal/testenv.StartMoto): a provider in moto's region, and EC2
// instances carrying given tags to find and tag.
package awstest

import (
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
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

// Tags reads an EC2 resource's tags from moto.
func Tags(t testing.TB, moto *testenv.Moto, id string) map[string]string {
	t.Helper()
	out, err := ec2.NewFromConfig(moto.Config).DescribeTags(t.Context(), &ec2.DescribeTagsInput{
		Filters: []ec2types.Filter{{Name: sdkaws.String("resource-id"), Values: []string{id}}}})
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]string{}
	for _, d := range out.Tags {
		tags[*d.Key] = *d.Value
	}
	return tags
}
