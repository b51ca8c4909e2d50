package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// volumeType is the resource type of an EBS volume, as Classified.Type
// spells it.
const volumeType = "ec2:volume"

// ReadTags reads the tags of EBS volumes (bare vol- IDs in the provider's
// region, or EC2 volume ARNs) and of load balancers (ARNs; Elastic Load
// Balancing's DescribeTags, 20 a call, see taggingTags) in bulk. Volumes:
// per region, DescribeVolumes with
// the volume-id filter, at most MaxFilterValues IDs a call (EC2's limit of
// 200 values per filter), so n volumes cost about ceil(n/200) requests. A
// filter that names a volume EC2 does not have leaves it out without an
// error: such an ID is Missing. A region whose read fails is in Failed and
// its IDs Unread; an ID that is no volume is Unread with the reason in
// Failed. EC2's reads have no search index to lag behind, so fresh needs
// nothing more. The error is for a context that ended.
func (p *Provider) ReadTags(ctx context.Context, ids, _ []string) (cloud.Reading, error) {
	var r cloud.Reading
	byRegion := map[string][]resourceRef{}
	others := map[string][]string{} // ARNs of other services, by region
	for _, id := range ids {
		if isTaggingARN(id) {
			others[p.regionOfARN(id)] = append(others[p.regionOfARN(id)], id)
			continue
		}
		ref, err := p.parseRef(id)
		if err == nil && !strings.HasPrefix(ref.ec2ID, "vol-") {
			err = fmt.Errorf("aws: %s is not an EBS volume: tagsync reads the tags of EBS volumes only", id)
		}
		if err != nil {
			r.Unread = append(r.Unread, id)
			r.Failed = append(r.Failed, cloud.ScopeError{Scope: id, Err: err})
			continue
		}
		byRegion[ref.region] = append(byRegion[ref.region], ref)
	}
	regions := make([]string, 0, len(byRegion))
	for region := range byRegion {
		regions = append(regions, region)
	}
	sort.Strings(regions)
	var calls atomic.Int64
	ctx = withCallCounter(ctx, &calls)
	for _, region := range regions {
		refs := byRegion[region]
		found, err := p.describeVolumes(ctx, region, refs)
		if ctx.Err() != nil {
			r.Calls = int(calls.Load())
			return r, ctx.Err()
		}
		if err != nil {
			r.Failed = append(r.Failed, cloud.ScopeError{Scope: "region " + region, Err: err})
			for _, ref := range refs {
				r.Unread = append(r.Unread, ref.id)
			}
			continue
		}
		for _, ref := range refs {
			t, ok := found[ref.ec2ID]
			if !ok {
				r.Missing = append(r.Missing, ref.id)
				continue
			}
			r.Resources = append(r.Resources, cloud.Classified{ID: ref.id, Type: volumeType, Scope: region, Tags: t, Rules: TagRules})
		}
	}
	for _, region := range slices.Sorted(maps.Keys(others)) {
		found, err := p.taggingTags(ctx, region, others[region])
		if ctx.Err() != nil {
			r.Calls = int(calls.Load())
			return r, ctx.Err()
		}
		for _, id := range others[region] {
			t, ok := found[id]
			switch {
			case err != nil:
				r.Unread = append(r.Unread, id)
			case !ok:
				r.Missing = append(r.Missing, id)
			default:
				r.Resources = append(r.Resources, cloud.Classified{ID: id, Type: typeOf(id), Scope: region, Tags: userTags(t), Rules: TagRules})
			}
		}
		if err != nil {
			r.Failed = append(r.Failed, cloud.ScopeError{Scope: "region " + region, Err: err})
		}
	}
	r.Calls = int(calls.Load())
	return r, nil
}

// describeVolumes reads the tags (without aws: ones) of the volumes refs
// name in region, MaxFilterValues IDs a call, keyed by volume ID.
func (p *Provider) describeVolumes(ctx context.Context, region string, refs []resourceRef) (map[string]tags.Set, error) {
	out := map[string]tags.Set{}
	for start := 0; start < len(refs); start += MaxFilterValues {
		chunk := refs[start:min(start+MaxFilterValues, len(refs))]
		ids := make([]string, len(chunk))
		for i, ref := range chunk {
			ids[i] = ref.ec2ID
		}
		pages := ec2.NewDescribeVolumesPaginator(p.clientsFor(region).ec2, &ec2.DescribeVolumesInput{
			Filters:    []ec2types.Filter{{Name: sdkaws.String("volume-id"), Values: ids}},
			MaxResults: sdkaws.Int32(int32(max(5, len(ids)))),
		})
		err := eachPage(pages.HasMorePages, func() (*ec2.DescribeVolumesOutput, error) { return pages.NextPage(ctx) },
			func(page *ec2.DescribeVolumesOutput) {
				for _, v := range page.Volumes {
					out[sdkaws.ToString(v.VolumeId)] = userTags(ec2Tags(v.Tags))
				}
			})
		if err != nil {
			return nil, p.wrap(region, fmt.Sprintf("aws: DescribeVolumes of %d volumes (%s, ...) in %s", len(ids), ids[0], region), err)
		}
	}
	return out, nil
}
