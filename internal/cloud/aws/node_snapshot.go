package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

var _ cloud.NodeProvider = (*Provider)(nil)

// ec2Instance is an EC2 instance as the node sync reads it.
type ec2Instance struct {
	arn   string
	group string   // its Auto Scaling group's name; "" for none
	tags  tags.Set // without the aws: tags
}

// asGroup is an Auto Scaling group as the node sync reads it.
type asGroup struct {
	arn, name string
	tags      tags.Set // without the aws: tags
	instances []string // the IDs of its instances
	// noPropagate are the names of its tags whose PropagateAtLaunch is
	// false, sorted: a write of such a tag keeps the flag, and the tag is
	// not copied to the group's instances.
	noPropagate []string
}

// propagates reports whether the group's tag name reaches its instances:
// every tag but those whose PropagateAtLaunch is false (a new tag is written
// with PropagateAtLaunch true).
func (g *asGroup) propagates(name string) bool {
	_, found := slices.BinarySearch(g.noPropagate, name)
	return !found
}

// Snapshot locates nodes on EC2 and reads the tags of their resources in
// bulk (see the package doc's "Node sync"): per region one DescribeInstances
// per MaxFilterValues instances (the instance-id filter, so an instance that
// no longer exists is missing from the answer instead of failing the call)
// and, for TargetScaleSet, one DescribeAutoScalingGroups per
// GroupsPerRead groups. Reads younger than Options.CacheTTL are reused
// unless opts.Fresh; older ones are forgotten first, so the cache holds
// the instances and groups that Nodes still name, not every one ever read. opts.Scopes are region names: nodes in other regions
// are unmanaged and cost no call.
//
// opts.Resources (canonical instance and group ARNs, after a change event)
// makes the read targeted: only the named instances and groups are read
// fresh, the instances in one DescribeInstances (per MaxFilterValues) and the
// groups in one DescribeAutoScalingGroups by name; the nodes' other reads
// (a changed group's instances, for their group) come from the cache while
// it holds them. opts.Fresh then applies to the named resources only.
//
// A read that fails fails only the nodes that needed it: their region is
// reported in Snapshot.Failed (Scope "region <name>") and their placements
// carry Err. The error return is for a snapshot that could not run at all
// (the context ended while reads failed).
func (p *Provider) Snapshot(ctx context.Context, nodes []cloud.Node, opts cloud.ReadOptions) (cloud.Snapshot, error) {
	target := opts.Target
	if target == "" {
		target = cloud.TargetScaleSet
	}
	p.nodes.sweep(p.opts.CacheTTL)
	snap := cloud.Snapshot{Placements: make(map[string]cloud.Placement, len(nodes)), Resources: map[string]cloud.Resource{}}
	refs := map[string]nodeRef{}
	created := map[string]time.Time{}
	need := map[string][]string{} // instance IDs by region
	seen := map[regionalID]bool{}
	for _, n := range nodes {
		ref, why := p.parseProviderID(n.ProviderID)
		if why == "" && !inScopes(ref.region, opts.Scopes) {
			why = fmt.Sprintf("region %q is not one of the synced scopes (regions)", ref.region)
		}
		if why != "" {
			snap.Placements[n.Name] = unmanaged("%s", why)
			continue
		}
		refs[n.Name] = ref
		created[n.Name] = n.Created
		if k := (regionalID{ref.region, ref.instanceID}); !seen[k] {
			seen[k] = true
			need[ref.region] = append(need[ref.region], ref.instanceID)
		}
	}
	r := &nodeReader{p: p, fresh: opts.Fresh, changed: changedResources(opts.Resources), instances: map[regionalID]*ec2Instance{}, groups: map[regionalID]*asGroup{},
		bad: map[regionalID]error{}, failed: map[string][]error{}}
	for _, region := range slices.Sorted(maps.Keys(need)) {
		r.readInstances(ctx, region, need[region])
		if target == cloud.TargetScaleSet {
			r.readGroups(ctx, region, r.groupsOf(region, need[region]))
		}
	}
	if err := ctx.Err(); err != nil && len(r.failed) > 0 {
		return cloud.Snapshot{}, fmt.Errorf("aws: snapshot of %d nodes: %w", len(nodes), err)
	}
	for name, ref := range refs {
		pl, res := r.place(ref, target, created[name])
		snap.Placements[name] = pl
		if res != nil {
			snap.Resources[cloud.CanonicalID(res.ID)] = *res
		}
		if pl.Member != "" {
			in := r.instances[regionalID{ref.region, ref.instanceID}]
			snap.Resources[cloud.CanonicalID(in.arn)] = cloud.Resource{ID: in.arn, Tags: in.tags.Clone()}
		}
	}
	snap.Failed = r.failures()
	return snap, nil
}

// nodeReader holds one Snapshot's reads and the ones that failed.
type nodeReader struct {
	p     *Provider
	fresh bool
	// changed are the resources a targeted read reads fresh (nil: not
	// targeted, fresh says for all).
	changed   *changed
	instances map[regionalID]*ec2Instance // by region and instance ID
	groups    map[regionalID]*asGroup     // by region and group name
	// bad are the instances (by ID) and groups (by "group/" and name) whose
	// read failed, with why.
	bad    map[regionalID]error
	failed map[string][]error // by region
}

// groupKey is the key of a group in nodeReader.bad.
func groupKey(region, name string) regionalID { return regionalID{region, "group/" + name} }

// fail records a failed read of keys in region.
func (r *nodeReader) fail(region string, err error, keys ...regionalID) {
	r.failed[region] = append(r.failed[region], err)
	for _, k := range keys {
		r.bad[k] = err
	}
}

// readInstances reads the instances ids of region: from the cache unless
// fresh, the rest with DescribeInstances, at most MaxFilterValues (and
// maxIDsPerCall) a call.
func (r *nodeReader) readInstances(ctx context.Context, region string, ids []string) {
	load(r, region, ids, &r.p.nodes.instances, r.instances, min(r.p.opts.maxIDsPerCall, MaxFilterValues), r.freshInstance,
		func(id string) regionalID { return regionalID{region, id} },
		func(chunk []string) (map[regionalID]*ec2Instance, error) {
			return patientRead(ctx, r.p, func() (map[regionalID]*ec2Instance, error) { return r.p.describeInstances(ctx, region, chunk) })
		})
}

// load puts into into the reads of keys in region that the cache holds
// (unless fresh says the key must be read) and reads the others with read, per at a call, caching
// what it read (a key read missing as the zero T: it stays missing until
// the cache's TTL or a fresh read); the keys of a failed call are marked
// bad (badKey) with its error.
func load[T any](r *nodeReader, region string, keys []string, cache *map[regionalID]cachedAt[T], into map[regionalID]T, per int,
	fresh func(regionalID) bool, badKey func(string) regionalID, read func([]string) (map[regionalID]T, error),
) {
	var missing []string
	for _, key := range keys {
		k := regionalID{region, key}
		if v, ok := cacheGet(&r.p.nodes, cache, k, r.p.opts.CacheTTL); ok && !fresh(k) {
			into[k] = v
		} else {
			missing = append(missing, key)
		}
	}
	for chunk := range slices.Chunk(missing, per) {
		found, err := read(chunk)
		if err != nil {
			bad := make([]regionalID, len(chunk))
			for i, key := range chunk {
				bad[i] = badKey(key)
			}
			r.fail(region, err, bad...)
			continue
		}
		for _, key := range chunk {
			k := regionalID{region, key}
			into[k] = found[k] // the zero T when missing: cached too
			cachePut(&r.p.nodes, cache, k, found[k])
		}
	}
}

// describeInstances reads instances of region by ID (the instance-id filter:
// IDs that name no instance are left out, not an error). Terminated
// instances count as missing.
func (p *Provider) describeInstances(ctx context.Context, region string, ids []string) (map[regionalID]*ec2Instance, error) {
	pages := ec2.NewDescribeInstancesPaginator(p.clientsFor(region).ec2, &ec2.DescribeInstancesInput{
		Filters:    []ec2types.Filter{{Name: sdkaws.String("instance-id"), Values: ids}},
		MaxResults: sdkaws.Int32(int32(max(5, min(len(ids), MaxFilterValues)))),
	})
	out := map[regionalID]*ec2Instance{}
	err := eachPage(pages.HasMorePages, func() (*ec2.DescribeInstancesOutput, error) { return pages.NextPage(ctx) },
		func(page *ec2.DescribeInstancesOutput) {
			for _, res := range page.Reservations {
				for _, in := range res.Instances {
					if in.State != nil && in.State.Name == ec2types.InstanceStateNameTerminated {
						continue
					}
					id := sdkaws.ToString(in.InstanceId)
					all := ec2Tags(in.Tags)
					e := &ec2Instance{arn: instanceARN(region, sdkaws.ToString(res.OwnerId), id), group: all[TagAutoScalingGroup], tags: userTags(all)}
					out[regionalID{region, id}] = e
				}
			}
		})
	if err != nil {
		return nil, p.wrap(region, fmt.Sprintf("aws: DescribeInstances of %d instances (%s, ...) in %s", len(ids), ids[0], region), err)
	}
	return out, nil
}

// eachPage runs each on every page of a paginated call: next returns the
// next page while more reports there is one.
func eachPage[O any](more func() bool, next func() (O, error), each func(O)) error {
	for more() {
		page, err := next()
		if err != nil {
			return err
		}
		each(page)
	}
	return nil
}

// groupsOf returns the names of the groups the read instances ids of
// region belong to.
func (r *nodeReader) groupsOf(region string, ids []string) []string {
	var names []string
	for _, id := range ids {
		if in := r.instances[regionalID{region, id}]; in != nil && in.group != "" && !slices.Contains(names, in.group) {
			names = append(names, in.group)
		}
	}
	return names
}

// readGroups reads the groups names of region: from the cache unless fresh,
// the rest with DescribeAutoScalingGroups, GroupsPerRead a call.
func (r *nodeReader) readGroups(ctx context.Context, region string, names []string) {
	load(r, region, names, &r.p.nodes.groups, r.groups, GroupsPerRead, r.freshGroup,
		func(name string) regionalID { return groupKey(region, name) },
		func(chunk []string) (map[regionalID]*asGroup, error) {
			return patientRead(ctx, r.p, func() (map[regionalID]*asGroup, error) { return r.p.describeGroups(ctx, region, chunk) })
		})
}

// describeGroups reads Auto Scaling groups of region by name; names that
// name no group are left out.
func (p *Provider) describeGroups(ctx context.Context, region string, names []string) (map[regionalID]*asGroup, error) {
	pages := autoscaling.NewDescribeAutoScalingGroupsPaginator(p.clientsFor(region).autoscaling, &autoscaling.DescribeAutoScalingGroupsInput{
		AutoScalingGroupNames: names, MaxRecords: sdkaws.Int32(GroupsPerRead),
	})
	out := map[regionalID]*asGroup{}
	err := eachPage(pages.HasMorePages, func() (*autoscaling.DescribeAutoScalingGroupsOutput, error) { return pages.NextPage(ctx) },
		func(page *autoscaling.DescribeAutoScalingGroupsOutput) {
			for _, g := range page.AutoScalingGroups {
				e := newGroup(g)
				out[regionalID{region, e.name}] = e
			}
		})
	if err != nil {
		return nil, p.wrap(region, fmt.Sprintf("aws: DescribeAutoScalingGroups of %d groups (%q, ...) in %s", len(names), names[0], region), err)
	}
	return out, nil
}

// newGroup converts a described group.
func newGroup(g astypes.AutoScalingGroup) *asGroup {
	all := tags.Set{}
	var noPropagate []string
	for _, t := range g.Tags {
		all[sdkaws.ToString(t.Key)] = sdkaws.ToString(t.Value)
		if !sdkaws.ToBool(t.PropagateAtLaunch) && !TagRules.IsReservedName(sdkaws.ToString(t.Key)) {
			noPropagate = append(noPropagate, sdkaws.ToString(t.Key))
		}
	}
	slices.Sort(noPropagate)
	e := &asGroup{arn: sdkaws.ToString(g.AutoScalingGroupARN), name: sdkaws.ToString(g.AutoScalingGroupName), tags: userTags(all),
		noPropagate: noPropagate}
	for _, in := range g.Instances {
		e.instances = append(e.instances, sdkaws.ToString(in.InstanceId))
	}
	return e
}

// place resolves a node's placement and the resource that carries its tags
// (nil when it has none in this snapshot). created is the Node's creation
// time (zero: unknown), from which an instance EC2 does not show yet gets
// NewInstanceGrace.
func (r *nodeReader) place(ref nodeRef, target cloud.Target, created time.Time) (cloud.Placement, *cloud.Resource) {
	out := cloud.Placement{Scope: regionScope(ref.region)}
	k := regionalID{ref.region, ref.instanceID}
	if err := r.bad[k]; err != nil {
		return unreadable(out, "EC2 instance "+ref.instanceID, err), nil
	}
	in := r.instances[k]
	if in == nil {
		since, from := r.p.nodes.clock().Sub(created), "its Node was created"
		if created.IsZero() {
			since, from = r.p.nodes.miss(k), "it was first missed"
		}
		if since < NewInstanceGrace {
			// Perhaps too new for EC2's reads: look again next pass.
			cacheDrop(&r.p.nodes, &r.p.nodes.instances, k)
			out.NotYet = true
			out.Reason = fmt.Sprintf("EC2 instance %s is not known to EC2 in region %s yet (EC2's reads are eventually consistent): "+
				"not synced yet, looked for again until %s after %s (%s ago)",
				ref.instanceID, ref.region, NewInstanceGrace, from, since.Round(time.Second))
			return out, nil
		}
		out.Reason = fmt.Sprintf("EC2 instance %s not found in region %s", ref.instanceID, ref.region)
		return out, nil
	}
	r.p.nodes.found(k)
	if target == cloud.TargetInstance || in.group == "" {
		if in.group == "" && target == cloud.TargetScaleSet {
			out.Note = fmt.Sprintf("EC2 instance %s is in no Auto Scaling group (Karpenter or standalone): synced with its own tags", ref.instanceID)
		}
		out.Managed, out.Resource = true, in.arn
		return out, &cloud.Resource{ID: in.arn, Tags: in.tags.Clone()}
	}
	if err := r.bad[groupKey(ref.region, in.group)]; err != nil {
		return unreadable(out, fmt.Sprintf("Auto Scaling group %q", in.group), err), nil
	}
	g := r.groups[regionalID{ref.region, in.group}]
	if g == nil {
		out.Reason = fmt.Sprintf("Auto Scaling group %q of EC2 instance %s not found in region %s", in.group, ref.instanceID, ref.region)
		return out, nil
	}
	out.Managed, out.Resource, out.Shared, out.Member = true, g.arn, true, in.arn
	return out, &cloud.Resource{ID: g.arn, Tags: g.tags.Clone(), OwnOnly: slices.Clone(g.noPropagate)}
}

// unreadable is the placement of a node whose resource could not be read:
// not synced in this pass, with the error.
func unreadable(out cloud.Placement, what string, err error) cloud.Placement {
	out.Err = err
	out.Reason = fmt.Sprintf("the %s could not be read, so the node is not synced in this pass: %v", what, err)
	return out
}

// failures returns the failed regions, one ScopeError each, sorted.
func (r *nodeReader) failures() []cloud.ScopeError {
	var out []cloud.ScopeError
	for _, region := range slices.Sorted(maps.Keys(r.failed)) {
		errs := r.failed[region]
		err := errs[0]
		if len(errs) > 1 {
			err = errors.Join(errs...)
		}
		out = append(out, cloud.ScopeError{Scope: regionScope(region), Err: err})
	}
	return out
}

// ec2Tags converts EC2 tags to a Set.
func ec2Tags(in []ec2types.Tag) tags.Set {
	out := make(tags.Set, len(in))
	for _, t := range in {
		out[sdkaws.ToString(t.Key)] = sdkaws.ToString(t.Value)
	}
	return out
}

// userTags returns s without AWS's own tags (the reserved aws: prefix, such
// as aws:autoscaling:groupName): tagsync can neither write nor delete them,
// and they do not count against the 50-tag limit.
func userTags(s tags.Set) tags.Set {
	out := make(tags.Set, len(s))
	for k, v := range s {
		if !TagRules.IsReservedName(k) {
			out[k] = v
		}
	}
	return out
}
