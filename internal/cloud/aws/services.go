package aws

import (
	"context"
	"sort"
	"sync/atomic"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	tagging "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	taggingtypes "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/types"

	"github.com/tagsync/tagsync/internal/cloud"
)

// ServiceNameTag is the tag the AWS cloud provider (cloud-provider-aws,
// TagNameKubernetesService) writes on the Classic and Network Load
// Balancers it makes for Services of type LoadBalancer: namespace/name.
const ServiceNameTag = "kubernetes.io/service-name"

// ServiceStackTag is the tag the AWS Load Balancer Controller writes on
// the load balancers it makes for Services: namespace/name.
const ServiceStackTag = "service.k8s.aws/stack"

// loadBalancerType is the Tagging API's type of Elastic Load Balancing
// load balancers (Classic, Application and Network alike).
const loadBalancerType = "elasticloadbalancing:loadbalancer"

// ServiceResources finds the load balancers made for the Services
// (namespace/name) in the provider's region: per tag that names a
// Service's load balancer (ServiceNameTag, the cloud provider's;
// ServiceStackTag, the AWS Load Balancer Controller's), one GetResources
// by that key alone (any value), 100 load balancers a page, so the search
// costs about 2 + n/100 requests whatever the number of Services. A load
// balancer belongs to one Service on AWS: none is shared. Tags are as the
// Tagging API's index shows them, which may lag a write by seconds. A
// search that fails is reported in Failed; the error is for a context
// that ended.
func (p *Provider) ServiceResources(ctx context.Context, services []string) (cloud.ServiceResources, error) {
	return p.loadBalancersNamed(ctx, services, ServiceNameTag, ServiceStackTag)
}

// IngressStackTag is the tag the AWS Load Balancer Controller writes on
// the Application Load Balancer it makes for an Ingress: namespace/name,
// or the IngressGroup's name for an explicit group
// (alb.ingress.kubernetes.io/group.name).
const IngressStackTag = "ingress.k8s.aws/stack"

// IngressResources finds the Application Load Balancers the AWS Load
// Balancer Controller made for the ingress stacks (IngressStackTag's
// values), as ServiceResources finds the Services': one GetResources by
// the key, 100 load balancers a page.
func (p *Provider) IngressResources(ctx context.Context, stacks []string) (cloud.ServiceResources, error) {
	return p.loadBalancersNamed(ctx, stacks, IngressStackTag)
}

// loadBalancersNamed finds the load balancers whose value of one of keys
// is among names, by that value.
func (p *Provider) loadBalancersNamed(ctx context.Context, names []string, keys ...string) (cloud.ServiceResources, error) {
	out := cloud.ServiceResources{Own: map[string][]cloud.Classified{}, Shared: map[string][]string{}}
	if len(names) == 0 {
		return out, nil
	}
	wanted := map[string]bool{}
	for _, s := range names {
		wanted[s] = true
	}
	var calls atomic.Int64
	ctx = withCallCounter(ctx, &calls)
	seen := map[string]bool{}
	for _, key := range keys {
		found, err := p.loadBalancersTagged(ctx, key)
		if ctx.Err() != nil {
			out.Calls = int(calls.Load())
			return out, ctx.Err()
		}
		if err != nil {
			out.Failed = append(out.Failed, cloud.ScopeError{Scope: "region " + p.region, Err: err})
			continue
		}
		for _, c := range found {
			svc := c.Tags[key]
			if !wanted[svc] || seen[c.ID] {
				continue
			}
			seen[c.ID] = true
			out.Own[svc] = append(out.Own[svc], c)
		}
	}
	for _, list := range out.Own {
		sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	}
	out.Calls = int(calls.Load())
	return out, nil
}

// loadBalancersTagged lists the provider region's load balancers that
// carry key, with all their tags.
func (p *Provider) loadBalancersTagged(ctx context.Context, key string) ([]cloud.Classified, error) {
	var out []cloud.Classified
	err := p.getResources(ctx, p.clientsFor(p.region), p.region, "the load balancers tagged "+key, &tagging.GetResourcesInput{
		TagFilters:          []taggingtypes.TagFilter{{Key: sdkaws.String(key)}},
		ResourceTypeFilters: []string{loadBalancerType},
	}, func(c cloud.Classified) {
		if c.Tags[key] != "" {
			out = append(out, c)
		}
	})
	return out, err
}
