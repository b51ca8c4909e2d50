package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	tagging "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	taggingtypes "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/types"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// tagFilter is one GetResources tag filter: a name and up to
// maxTagFilterValues values, any of which matches.
type tagFilter struct {
	name   string
	values []string
}

// tagFilters turns OR-ed classifiers into GetResources tag filters, each
// searched on its own (the API ANDs the filters of one request): one per
// tag name, carrying all the values asked for that name (the API ORs the
// values of one filter), in chunks of maxTagFilterValues. Names are
// compared exactly, as AWS compares tag keys.
func tagFilters(classifiers []cloud.Classifier) []tagFilter {
	byName := map[string][]string{}
	for _, c := range classifiers {
		if !slices.Contains(byName[c.Name], c.Value) {
			byName[c.Name] = append(byName[c.Name], c.Value)
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []tagFilter
	for _, n := range names {
		for chunk := range slices.Chunk(byName[n], maxTagFilterValues) {
			out = append(out, tagFilter{name: n, values: chunk})
		}
	}
	return out
}

// Discover lists the EC2 resources (Options.ResourceTypes) of each region in
// opts.Scopes (default: the provider's region) that carry any of the
// classifiers, with all their tags. Per region it pages through the
// Resource Groups Tagging API's GetResources, 100 resources a page, once
// per classifier name (classifiers sharing a name share a request, their
// values OR-ed in one tag filter; tag keys are case-sensitive on AWS), and
// unites the results by ARN. Regions are searched concurrently. A region
// whose search fails is reported in Discovery.Failed (Scope "region
// <name>") and contributes no resource; the others are complete. The error
// is for a search that could not run: a classifier with an empty name, or
// the context ended.
//
// Resources are sorted by cloud.CanonicalID. It lower-cases IDs, which is
// harmless here: EC2 ARNs are lower-case throughout (partition, service,
// region, numeric account, resource type and hexadecimal IDs), so no two
// distinct EC2 ARNs collide. ARNs of other services may carry
// case-sensitive names and would collide; Discover never returns them, and
// it dedupes by the exact ARN regardless.
func (p *Provider) Discover(ctx context.Context, classifiers []cloud.Classifier, opts cloud.DiscoverOptions) (cloud.Discovery, error) {
	for _, c := range classifiers {
		if c.Name == "" {
			return cloud.Discovery{}, errors.New("aws: a classifier has an empty tag name")
		}
	}
	if err := ctx.Err(); err != nil {
		return cloud.Discovery{}, err
	}
	filters := tagFilters(classifiers)
	if len(filters) == 0 {
		return cloud.Discovery{}, nil
	}
	regions := opts.Scopes
	if len(regions) == 0 {
		regions = []string{p.region}
	}
	regions = dedupe(regions)

	var calls atomic.Int64
	ctx = withCallCounter(ctx, &calls)
	type result struct {
		found []cloud.Classified
		err   error
	}
	results := make([]result, len(regions))
	var wg sync.WaitGroup
	sem := make(chan struct{}, discoverParallelism)
	for i, region := range regions {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			found, err := p.discoverRegion(ctx, region, filters)
			results[i] = result{found, err}
		})
	}
	wg.Wait()

	d := cloud.Discovery{Calls: int(calls.Load())}
	if err := ctx.Err(); err != nil {
		return d, err
	}
	seen := map[string]bool{} // exact ARNs
	for i, r := range results {
		if r.err != nil {
			d.Failed = append(d.Failed, cloud.ScopeError{Scope: "region " + regions[i], Err: r.err})
			continue
		}
		for _, c := range r.found {
			if seen[c.ID] {
				continue
			}
			seen[c.ID] = true
			d.Resources = append(d.Resources, c)
		}
	}
	sort.Slice(d.Resources, func(i, j int) bool {
		a, b := d.Resources[i].ID, d.Resources[j].ID
		if ca, cb := cloud.CanonicalID(a), cloud.CanonicalID(b); ca != cb {
			return ca < cb
		}
		return a < b
	})
	return d, nil
}

// discoverRegion runs every filter's GetResources pages in one region.
func (p *Provider) discoverRegion(ctx context.Context, region string, filters []tagFilter) ([]cloud.Classified, error) {
	c := p.clientsFor(region)
	var out []cloud.Classified
	seen := map[string]bool{}
	for _, f := range filters {
		err := p.getResources(ctx, c, region, fmt.Sprintf("the resources tagged %s", f), &tagging.GetResourcesInput{
			TagFilters:          []taggingtypes.TagFilter{{Key: sdkaws.String(f.name), Values: f.values}},
			ResourceTypeFilters: p.opts.ResourceTypes,
		}, func(r cloud.Classified) {
			if !seen[r.ID] {
				seen[r.ID] = true
				out = append(out, r)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// getResources pages through GetResources of in (ResourcesPerPage a
// page) in region and hands each resource found to each, with all its
// tags; what names the search in errors. A page that failed is asked for
// again (the paginator keeps its token) while throttling lasts
// (ThrottlePatience).
func (p *Provider) getResources(ctx context.Context, c *clients, region, what string, in *tagging.GetResourcesInput, each func(cloud.Classified)) error {
	in.ResourcesPerPage = sdkaws.Int32(ResourcesPerPage)
	pages := tagging.NewGetResourcesPaginator(c.tagging, in, func(o *tagging.GetResourcesPaginatorOptions) { o.StopOnDuplicateToken = true })
	for pages.HasMorePages() {
		page, err := patientRead(ctx, p, func() (*tagging.GetResourcesOutput, error) {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, p.wrap(region, fmt.Sprintf("aws: GetResources of %s in %s", what, region), err)
			}
			return page, nil
		})
		if err != nil {
			return err
		}
		for _, m := range page.ResourceTagMappingList {
			id := sdkaws.ToString(m.ResourceARN)
			if id == "" {
				continue
			}
			set := make(tags.Set, len(m.Tags))
			for _, t := range m.Tags {
				set[sdkaws.ToString(t.Key)] = sdkaws.ToString(t.Value)
			}
			each(cloud.Classified{ID: id, Type: typeOf(id), Scope: region, Tags: set, Rules: TagRules})
		}
	}
	return nil
}

// String renders a filter as in messages: name=value or name in (a, b).
func (f tagFilter) String() string {
	if len(f.values) == 1 {
		return fmt.Sprintf("%q=%q", f.name, f.values[0])
	}
	q := make([]string, len(f.values))
	for i, v := range f.values {
		q[i] = fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%q in (%s)", f.name, strings.Join(q, ", "))
}

// typeOf returns the lower-case service:type of an ARN ("ec2:instance"
// for arn:aws:ec2:...:instance/i-0abc), the service alone when its resource
// has no type, "" for what is not an ARN.
func typeOf(id string) string {
	a, err := arn.Parse(id)
	if err != nil {
		return ""
	}
	typ, _, found := strings.Cut(a.Resource, "/")
	if !found {
		typ, _, found = strings.Cut(a.Resource, ":")
	}
	if !found {
		return strings.ToLower(a.Service)
	}
	return strings.ToLower(a.Service + ":" + typ)
}

// dedupe returns ss without repeats, in first-seen order.
func dedupe(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// DescribeChanged returns the EC2 resource id (an ARN) tagged t as Discover
// of the regions scopes (default: the provider's region) would find it: a
// resource of a type Discover searches, in one of those regions
// (cloud.ChangeDescriber). It makes no call: EventBridge's tag change events
// carry the resource's whole tag set, and the Tagging API's index may not
// show the change yet.
func (p *Provider) DescribeChanged(id string, t tags.Set, scopes []string) (cloud.Classified, bool) {
	a, err := arn.Parse(id)
	if err != nil {
		return cloud.Classified{}, false
	}
	regions := scopes
	if len(regions) == 0 {
		regions = []string{p.region}
	}
	typ := typeOf(id)
	if !slices.Contains(regions, a.Region) || !slices.Contains(p.opts.ResourceTypes, typ) {
		return cloud.Classified{}, false
	}
	return cloud.Classified{ID: id, Type: typ, Scope: a.Region, Tags: t.Clone(), Rules: TagRules}, true
}
