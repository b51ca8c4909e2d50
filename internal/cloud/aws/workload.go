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

// ReadTags reads the tags of EBS volumes and snapshots (bare vol- and
// snap- IDs in the provider's region, or their EC2 ARNs; snapshots with
// DescribeSnapshots as volumes are read) and of load balancers (ARNs; Elastic Load
// Balancing's DescribeTags, 20 a call, see loadBalancerTags) in bulk. Volumes:
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
	lbs := map[string][]string{} // load balancer ARNs, by region
	for _, id := range ids {
		if isLoadBalancing(id) {
			lbs[p.regionOfARN(id)] = append(lbs[p.regionOfARN(id)], id)
			continue
		}
		ref, err := p.parseRef(id)
		if err == nil && ebsType(ref.ec2ID) == "" {
			err = fmt.Errorf("aws: %s is neither an EBS volume nor an EBS snapshot nor a load balancer: tagsync reads the tags of those only", id)
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
		found, err := p.describeEBS(ctx, region, refs)
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
			r.Resources = append(r.Resources, cloud.Classified{ID: ref.id, Type: ebsType(ref.ec2ID), Scope: region, Tags: t, Rules: TagRules})
		}
	}
	for _, region := range slices.Sorted(maps.Keys(lbs)) {
		found, err := p.loadBalancerTags(ctx, region, lbs[region])
		if ctx.Err() != nil {
			r.Calls = int(calls.Load())
			return r, ctx.Err()
		}
		for _, id := range lbs[region] {
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

// ebsType is the resource type of an EBS volume or snapshot ID, as
// Classified.Type spells it; "" for another ID.
func ebsType(ec2ID string) string {
	switch {
	case strings.HasPrefix(ec2ID, "vol-"):
		return volumeType
	case strings.HasPrefix(ec2ID, "snap-"):
		return snapshotType
	}
	return ""
}

// snapshotType is the resource type of an EBS snapshot.
const snapshotType = "ec2:snapshot"

// describeEBS reads the tags (without aws: ones) of the volumes and
// snapshots refs name in region, keyed by ID.
func (p *Provider) describeEBS(ctx context.Context, region string, refs []resourceRef) (map[string]tags.Set, error) {
	var vols, snaps []string
	for _, ref := range refs {
		if ebsType(ref.ec2ID) == snapshotType {
			snaps = append(snaps, ref.ec2ID)
		} else {
			vols = append(vols, ref.ec2ID)
		}
	}
	out, err := p.describeVolumes(ctx, region, vols)
	if err != nil {
		return nil, err
	}
	for chunk := range slices.Chunk(snaps, MaxFilterValues) {
		pages := ec2.NewDescribeSnapshotsPaginator(p.clientsFor(region).ec2, &ec2.DescribeSnapshotsInput{
			Filters:    []ec2types.Filter{{Name: sdkaws.String("snapshot-id"), Values: chunk}},
			MaxResults: sdkaws.Int32(int32(max(5, len(chunk)))),
		})
		err := eachPage(pages.HasMorePages, func() (*ec2.DescribeSnapshotsOutput, error) { return pages.NextPage(ctx) },
			func(page *ec2.DescribeSnapshotsOutput) {
				for _, v := range page.Snapshots {
					out[sdkaws.ToString(v.SnapshotId)] = userTags(ec2Tags(v.Tags))
				}
			})
		if err != nil {
			return nil, p.wrap(region, fmt.Sprintf("aws: DescribeSnapshots of %d snapshots (%s, ...) in %s", len(chunk), chunk[0], region), err)
		}
	}
	return out, nil
}

// describeVolumes reads the tags (without aws: ones) of the volumes ids
// name in region, MaxFilterValues IDs a call, keyed by volume ID.
func (p *Provider) describeVolumes(ctx context.Context, region string, all []string) (map[string]tags.Set, error) {
	out := map[string]tags.Set{}
	for ids := range slices.Chunk(all, MaxFilterValues) {
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
