package aws

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/testenv"
)

// elb returns a seeding Elastic Load Balancing client of region.
func (e *env) elb(region string) *elbv2.Client {
	cfg := moto.Config.Copy()
	cfg.HTTPClient = e.http
	return elbv2.NewFromConfig(cfg, func(o *elbv2.Options) { o.Region = region })
}

// lbNames numbers load balancers apart.
var lbNames atomic.Int64

// loadBalancers creates n network load balancers in region's default
// subnets, tagged t, and returns their ARNs.
func (e *env) loadBalancers(region string, n int, t map[string]string) []string {
	e.t.Helper()
	subnets, err := e.ec2(region).DescribeSubnets(e.ctx, &ec2.DescribeSubnetsInput{
		Filters: []ec2types.Filter{{Name: sdkaws.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil || len(subnets.Subnets) < 2 {
		e.t.Fatalf("DescribeSubnets in %s: %d subnets, %v", region, len(subnets.Subnets), err)
	}
	ids := []string{sdkaws.ToString(subnets.Subnets[0].SubnetId), sdkaws.ToString(subnets.Subnets[1].SubnetId)}
	var lbTags []elbv2types.Tag
	for k, v := range t {
		lbTags = append(lbTags, elbv2types.Tag{Key: sdkaws.String(k), Value: sdkaws.String(v)})
	}
	var arns []string
	for range n {
		out, err := e.elb(region).CreateLoadBalancer(e.ctx, &elbv2.CreateLoadBalancerInput{
			Name: sdkaws.String(fmt.Sprintf("lb-%d", lbNames.Add(1))), Type: elbv2types.LoadBalancerTypeEnumNetwork,
			Subnets: ids, Tags: lbTags,
		})
		if err != nil {
			e.t.Fatalf("CreateLoadBalancer in %s: %v", region, err)
		}
		arns = append(arns, sdkaws.ToString(out.LoadBalancers[0].LoadBalancerArn))
	}
	return arns
}

// lbTags reads load balancers' tags with the seeding client, by ARN.
func (e *env) lbTags(region string, arns ...string) map[string]map[string]string {
	e.t.Helper()
	got := map[string]map[string]string{}
	for chunk := range slices.Chunk(arns, 20) {
		out, err := e.elb(region).DescribeTags(e.ctx, &elbv2.DescribeTagsInput{ResourceArns: chunk})
		if err != nil {
			e.t.Fatalf("DescribeTags: %v", err)
		}
		for _, d := range out.TagDescriptions {
			m := map[string]string{}
			for _, t := range d.Tags {
				m[sdkaws.ToString(t.Key)] = sdkaws.ToString(t.Value)
			}
			got[sdkaws.ToString(d.ResourceArn)] = m
		}
	}
	return got
}

// TestWriteTagsLoadBalancers: load balancers are written through the
// Tagging API, 20 ARNs a call (its limit, which the rules in front of moto
// enforce), EC2 resources of the same write through EC2 as before; a
// missing load balancer fails alone (FailedResourcesMap) with ErrNotFound
// and the others are written. A conditional deletion reads first and
// leaves the load balancer whose value another writer changed.
func TestWriteTagsLoadBalancers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const region = "us-east-1"
	lbs := e.loadBalancers(region, 25, map[string]string{"kubernetes.io/cluster/c1": "owned"})
	vols := e.volumes(region, 2, nil)
	gone := lbs[0][:len(lbs[0])-4] + "dead"
	all := append(append(slices.Clone(lbs[:10]), gone), append(vols, lbs[10:]...)...)

	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: all, Patch: tags.Patch{Set: tags.Set{"team": "a", "env": "prod"}}}}, nil)
	checkResults(t, res, all, map[string]error{gone: cloud.ErrNotFound})
	for id, got := range e.lbTags(region, lbs...) {
		if got["team"] != "a" || got["env"] != "prod" || got["kubernetes.io/cluster/c1"] != "owned" {
			t.Errorf("%s tags = %v, want team=a, env=prod and the cluster tag", id, got)
		}
	}
	for _, id := range vols {
		if got := e.tagsOf(id); got["team"] != "a" {
			t.Errorf("%s tags = %v, want team=a", id, got)
		}
	}
	if got := e.p.Calls(); got["tag:TagResources"] != 2 || got["ec2:CreateTags"] != 1 {
		t.Errorf("calls = %v, want 2 TagResources (26 ARNs) and 1 CreateTags", got)
	}

	// Another writer changes one load balancer's team; a deletion that
	// expects team=a leaves it.
	if _, err := e.elb(region).AddTags(e.ctx, &elbv2.AddTagsInput{ResourceArns: lbs[:1],
		Tags: []elbv2types.Tag{{Key: sdkaws.String("team"), Value: sdkaws.String("b")}}}); err != nil {
		t.Fatal(err)
	}
	res = e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: lbs, Patch: tags.Patch{Delete: []string{"team"}}, Expect: tags.Set{"team": "a"}}}, nil)
	checkResults(t, res, lbs, nil)
	for id, got := range e.lbTags(region, lbs...) {
		want := ""
		if id == lbs[0] {
			want = "b"
		}
		if got["team"] != want || got["env"] != "prod" {
			t.Errorf("%s tags = %v, want team=%q and env kept", id, got, want)
		}
	}
	if got := e.p.Calls(); got["elasticloadbalancing:DescribeTags"] != 2 || got["tag:UntagResources"] != 2 {
		t.Errorf("calls = %v, want 2 DescribeTags (25 load balancers) and 2 UntagResources (24 ARNs)", got)
	}
}

// TestWriteTagsLoadBalancerTagLimit: a load balancer the write would take
// past its tag quota fails alone with ErrTooManyTags (moto's quota of 10,
// below AWS's 50), the others of the call are written.
func TestWriteTagsLoadBalancerTagLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const region = "us-east-1"
	full := map[string]string{}
	for i := range 10 {
		full[fmt.Sprintf("k%d", i)] = "v"
	}
	lbs := e.loadBalancers(region, 1, full)
	ok := e.loadBalancers(region, 1, nil)
	all := append(slices.Clone(lbs), ok...)
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: all, Patch: tags.Patch{Set: tags.Set{"team": "a", "env": "prod"}}}}, nil)
	checkResults(t, res, all, map[string]error{lbs[0]: cloud.ErrTooManyTags})
	if got := e.lbTags(region, ok...)[ok[0]]; got["team"] != "a" {
		t.Errorf("%s tags = %v, want team=a", ok[0], got)
	}
}

// TestWriteTagsRidesOutTaggingThrottling: with the Tagging API's
// TagResources throttled to one call a second in the account, writing 41
// load balancers (3 calls of at most 20) is refused with ThrottledException
// and waits, and every load balancer ends up written.
func TestWriteTagsRidesOutTaggingThrottling(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const region = "us-east-1"
	lbs := e.loadBalancers(region, 41, nil)
	moto.Rules.SetTaggingBucket(e.account, "TagResources", testenv.EC2Bucket{Capacity: 1, Refill: 1})
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: lbs, Patch: tags.Patch{Set: tags.Set{"team": "a"}}}}, nil)
	checkResults(t, res, lbs, nil)
	for id, got := range e.lbTags(region, lbs...) {
		if got["team"] != "a" {
			t.Errorf("%s tags = %v, want team=a", id, got)
		}
	}
	if moto.Rules.Count("tagging:TagResources", "ThrottledException") == 0 {
		t.Errorf("no TagResources was throttled; the bucket of 1 call a second should refuse some of 3 calls sent at once")
	}
}

// TestDiscoverFindsLoadBalancers: the metadata engine's search reaches
// load balancers and target groups (the cluster's, by its ownership tag)
// beside EC2 resources.
func TestDiscoverFindsLoadBalancers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const region = "us-east-1"
	owned := map[string]string{"kubernetes.io/cluster/c1": "owned"}
	lbs := e.loadBalancers(region, 2, owned)
	inst := e.instances(region, 1, owned)
	d, err := e.p.Discover(e.ctx, []cloud.Classifier{{Name: "kubernetes.io/cluster/c1", Value: "owned"}}, cloud.DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range d.Resources {
		got = append(got, r.ID)
		if slices.Contains(lbs, r.ID) && r.Type != "elasticloadbalancing:loadbalancer" {
			t.Errorf("%s type = %q, want elasticloadbalancing:loadbalancer", r.ID, r.Type)
		}
	}
	for _, id := range append(lbs, inst...) {
		if !slices.Contains(got, id) {
			t.Errorf("Discover found %v, want %s among them", got, id)
		}
	}
}

// TestConditionalDeleteNeedsAConsistentRead: a deletion that must still
// find its value is not sent to a resource whose value tagsync cannot
// read consistently (the Tagging API's index lags): it fails, with no call.
func TestConditionalDeleteNeedsAConsistentRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fs := fmt.Sprintf("arn:aws:elasticfilesystem:us-east-1:%s:file-system/fs-0123456789abcdef0", e.account)
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: []string{fs}, Patch: tags.Patch{Delete: []string{"team"}}, Expect: tags.Set{"team": "a"}}}, nil)
	if len(res) != 1 || !errors.Is(res[0].Err, errNoConditionalDelete) {
		t.Fatalf("results %+v, want errNoConditionalDelete", res)
	}
	if got := e.p.Calls(); len(got) != 0 {
		t.Errorf("calls %v, want none", got)
	}
}
