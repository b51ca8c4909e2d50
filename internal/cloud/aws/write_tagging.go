package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	tagging "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	taggingtypes "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/types"
	"github.com/aws/smithy-go"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// The Resource Groups Tagging API's write limits, from its API reference
// (TagResources and UntagResources, https://docs.aws.amazon.com/resourcegroupstagging/latest/APIReference/API_TagResources.html):
// ResourceARNList takes 1 to 20 ARNs, Tags and TagKeys 1 to 50 entries.
const (
	// MaxTaggingWriteARNs is the most ARNs one TagResources or
	// UntagResources call names.
	MaxTaggingWriteARNs = 20
	// MaxTaggingWriteTags is the most tags one TagResources call sets, and
	// the most keys one UntagResources call removes.
	MaxTaggingWriteTags = 50
)

// isTaggingARN reports whether id is the ARN of a resource of another
// service than EC2: WriteTags writes those through the Tagging API.
func isTaggingARN(id string) bool {
	a, err := arn.Parse(id)
	return err == nil && a.Service != "ec2"
}

// regionOfARN returns the region of an ARN, or the provider's for a
// global resource.
func (p *Provider) regionOfARN(id string) string {
	if a, err := arn.Parse(id); err == nil && a.Region != "" {
		return a.Region
	}
	return p.region
}

// writeTagging applies a write to resources of other services than EC2
// (load balancers, target groups, file systems...) in one region through
// the Resource Groups Tagging API, which writes each service's tags with
// that service's own permission (e.g. elasticloadbalancing:AddTags besides
// tag:TagResources). Per batch of MaxTaggingWriteARNs ARNs it sends one
// UntagResources per MaxTaggingWriteTags names deleted, then one
// TagResources per MaxTaggingWriteTags tags set, for the resources whose
// deletion did not fail. The API reports a resource it could not write in
// FailedResourcesMap while the call succeeds: that resource fails alone.
//
// The Tagging API has no conditional delete: a name deleted with an
// expected value is first read from the load balancer itself (see
// loadBalancerTags), and deleted only where it still holds that value. A
// writer that changes the value between that read and the delete loses
// it, which EC2's conditional DeleteTags rules out for EC2 resources. On
// the resources of other services such a deletion is not sent: it fails
// with errNoConditionalDelete (the Tagging API's own read answers from an
// index that may show a value overwritten seconds ago).
func (p *Provider) writeTagging(ctx context.Context, region string, arns []string, w cloud.TagWrite) map[string]error {
	failed := map[string]error{}
	groups, err := p.deletions(ctx, region, arns, w, failed)
	if err != nil {
		for _, id := range arns {
			failed[id] = err
		}
		return failed
	}
	for _, g := range groups {
		for chunk := range slices.Chunk(g.arns, MaxTaggingWriteARNs) {
			for names := range slices.Chunk(g.names, MaxTaggingWriteTags) {
				p.untag(ctx, region, chunk, names, failed)
			}
		}
	}
	if len(w.Patch.Set) == 0 {
		return failed
	}
	rest := slices.DeleteFunc(slices.Clone(arns), func(id string) bool { return failed[id] != nil })
	set := w.Patch.Set.Names()
	for chunk := range slices.Chunk(rest, MaxTaggingWriteARNs) {
		for names := range slices.Chunk(set, MaxTaggingWriteTags) {
			part := make(map[string]string, len(names))
			for _, n := range names {
				part[n] = w.Patch.Set[n]
			}
			p.tag(ctx, region, chunk, part, failed)
		}
	}
	return failed
}

// deletion is a set of resources that lose the same names.
type deletion struct {
	names []string
	arns  []string
}

// errNoConditionalDelete: a deletion that must still find its value
// cannot be checked on this service's resources.
var errNoConditionalDelete = errors.New("aws: tagsync deletes a tag only where it still holds the value it read, and can read that value consistently only from EC2 and Elastic Load Balancing resources; this deletion was not sent")

// deletions groups arns by the names w deletes from each: all of
// Patch.Delete without expected values; with them, a name only where a
// read of the load balancer finds it holding its expected value (other
// resources fail in failed with errNoConditionalDelete).
func (p *Provider) deletions(ctx context.Context, region string, arns []string, w cloud.TagWrite, failed map[string]error) ([]deletion, error) {
	if len(w.Patch.Delete) == 0 {
		return nil, nil
	}
	nc := TagRules.NameCase()
	conditional := slices.ContainsFunc(w.Patch.Delete, func(n string) bool { _, ok := w.Expect.Get(nc, n); return ok })
	if !conditional {
		return []deletion{{names: w.Patch.Delete, arns: arns}}, nil
	}
	var lbs []string
	for _, id := range arns {
		if isLoadBalancing(id) {
			lbs = append(lbs, id)
		} else {
			failed[id] = fmt.Errorf("%w: %s", errNoConditionalDelete, id)
		}
	}
	current, err := p.loadBalancerTags(ctx, region, lbs)
	if err != nil {
		return nil, err
	}
	byNames := map[string]*deletion{}
	var out []*deletion
	for _, id := range lbs {
		var names []string
		for _, n := range w.Patch.Delete {
			want, expected := w.Expect.Get(nc, n)
			have, held := current[id].Get(nc, n)
			if held && (!expected || have == want) {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			continue
		}
		key := strings.Join(names, "\x00")
		if byNames[key] == nil {
			byNames[key] = &deletion{names: names}
			out = append(out, byNames[key])
		}
		byNames[key].arns = append(byNames[key].arns, id)
	}
	groups := make([]deletion, len(out))
	for i, d := range out {
		groups[i] = *d
	}
	return groups, nil
}

// loadBalancerTags reads the current tags of Elastic Load Balancing
// resources with that service's DescribeTags (MaxELBDescribeARNs a call),
// which answers from the resources themselves, not from the Tagging API's
// index. A resource it does not list has no tags.
func (p *Provider) loadBalancerTags(ctx context.Context, region string, arns []string) (map[string]tags.Set, error) {
	out := map[string]tags.Set{}
	c := p.clientsFor(region)
	for chunk := range slices.Chunk(arns, MaxELBDescribeARNs) {
		page, err := patientRead(ctx, p, func() (*elbv2.DescribeTagsOutput, error) {
			page, err := c.elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: chunk})
			if err != nil {
				return nil, p.wrap(region, fmt.Sprintf("aws: DescribeTags of %s in %s", describeARNs(chunk), region), err)
			}
			return page, nil
		})
		if err != nil {
			return nil, err
		}
		for _, d := range page.TagDescriptions {
			set := tags.Set{}
			for _, t := range d.Tags {
				set[sdkaws.ToString(t.Key)] = sdkaws.ToString(t.Value)
			}
			out[sdkaws.ToString(d.ResourceArn)] = set
		}
	}
	return out, nil
}

// isLoadBalancing reports whether id is an Elastic Load Balancing ARN.
func isLoadBalancing(id string) bool {
	a, err := arn.Parse(id)
	return err == nil && a.Service == "elasticloadbalancing"
}

// MaxELBDescribeARNs is the most resources one Elastic Load Balancing
// DescribeTags call names (its API reference: "You can specify up to 20
// resources in a single call").
const MaxELBDescribeARNs = 20

// untag sends one UntagResources and records its failures.
func (p *Provider) untag(ctx context.Context, region string, arns, names []string, failed map[string]error) {
	what := fmt.Sprintf("aws: UntagResources %s on %s in %s", strings.Join(names, ", "), describeARNs(arns), region)
	p.sendTagging(ctx, region, arns, what, failed, func(c *tagging.Client) (map[string]failure, error) {
		out, err := c.UntagResources(ctx, &tagging.UntagResourcesInput{ResourceARNList: arns, TagKeys: names})
		if err != nil {
			return nil, err
		}
		return failures(out.FailedResourcesMap), nil
	})
}

// tag sends one TagResources and records its failures.
func (p *Provider) tag(ctx context.Context, region string, arns []string, set map[string]string, failed map[string]error) {
	what := fmt.Sprintf("aws: TagResources %s on %s in %s", strings.Join(slices.Sorted(maps.Keys(set)), ", "), describeARNs(arns), region)
	p.sendTagging(ctx, region, arns, what, failed, func(c *tagging.Client) (map[string]failure, error) {
		out, err := c.TagResources(ctx, &tagging.TagResourcesInput{ResourceARNList: arns, Tags: set})
		if err != nil {
			return nil, err
		}
		return failures(out.FailedResourcesMap), nil
	})
}

// failure is one resource the Tagging API could not write.
type failure struct {
	code, msg string
	status    int32
}

// failures reads a FailedResourcesMap.
func failures(m map[string]taggingtypes.FailureInfo) map[string]failure {
	out := make(map[string]failure, len(m))
	for id, f := range m {
		out[id] = failure{code: string(f.ErrorCode), msg: sdkaws.ToString(f.ErrorMessage), status: f.StatusCode}
	}
	return out
}

// sendTagging runs one Tagging API write: a refused call fails every
// resource of it (throttling is waited out by the caller); a resource in
// the answer's FailedResourcesMap fails alone, with the service's code and
// message as its error.
func (p *Provider) sendTagging(ctx context.Context, region string, arns []string, what string, failed map[string]error, call func(*tagging.Client) (map[string]failure, error)) {
	bad, err := call(p.clientsFor(region).tagging)
	if err != nil {
		e := p.wrap(region, what, err)
		for _, id := range arns {
			failed[id] = e
		}
		return
	}
	for id, f := range bad {
		if !slices.Contains(arns, id) {
			continue
		}
		apiErr := &smithy.GenericAPIError{Code: f.code, Message: fmt.Sprintf("%s (HTTP %d)", f.msg, f.status), Fault: smithy.FaultClient}
		failed[id] = p.wrap(region, fmt.Sprintf("aws: the Tagging API could not write %s", id), apiErr)
	}
}

// describeARNs names a batch of ARNs in messages.
func describeARNs(arns []string) string {
	if len(arns) == 1 {
		return arns[0]
	}
	return fmt.Sprintf("%d resources (%s, ...)", len(arns), arns[0])
}
