package aws

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// PatchTags sets and deletes the named tags of one node resource, based on
// a read of it, and returns its tags afterwards (without AWS's aws: tags).
// id is what Snapshot placed nodes on: an EC2 instance ARN (or bare
// instance ID in the provider's region), or an Auto Scaling group ARN.
// Names match exactly (AWS tag keys are case-sensitive); a patch naming an
// aws: tag, or one leaving more than 50 tags, is refused before any call
// (the latter with cloud.ErrTooManyTags). Nothing is written when the patch
// changes nothing.
//
// An instance costs one DescribeInstances (none when the node sync read it
// less than WriteReadAge ago: see patchBatch), then a DeleteTags (each name
// with the value read: EC2 deletes it only where it still has that value)
// and a CreateTags. A group costs one DescribeAutoScalingGroups, then
// Auto Scaling's DeleteTags and CreateOrUpdateTags (PropagateAtLaunch true
// for a new tag, so instances launched later carry it, and as read for a
// tag whose value changes; MaxGroupTagsPerCall tags a
// call, and a failed call undoes the ones answered before it: see
// writeGroupTags), then one EC2 DeleteTags and
// one CreateTags for all the group's current instances (MaxIDsPerCall a
// call; deletions conditional on the group's old value; a tag whose
// PropagateAtLaunch is false is not set on them). When the group was
// written but some instance was not, the error says so; the group's tags
// are written either way. After a failure the cached reads of the resource
// are dropped.
func (p *Provider) PatchTags(ctx context.Context, id string, patch tags.Patch) (cloud.Resource, error) {
	if err := checkReserved(id, patch); err != nil {
		return cloud.Resource{}, err
	}
	g, isGroup, err := parseGroupARN(id)
	if err != nil {
		return cloud.Resource{}, err
	}
	if isGroup {
		return p.patchGroup(ctx, g, patch)
	}
	ref, err := p.parseRef(id)
	if err != nil {
		return cloud.Resource{}, err
	}
	return p.patchInstance(ctx, ref, patch)
}

// checkReserved refuses a patch that names an aws: tag.
func checkReserved(id string, patch tags.Patch) error {
	for _, name := range append(patch.Set.Names(), patch.Delete...) {
		if TagRules.IsReservedName(name) {
			return fmt.Errorf("aws: patch of %s names tag %q: the aws: prefix is reserved for AWS, tagsync never writes or deletes such tags", id, name)
		}
	}
	return nil
}

// tagOps splits a patch into the tags that change cur: set holds the names
// whose value differs, del the deleted names cur has, with the value read.
func tagOps(cur tags.Set, patch tags.Patch) (set, del tags.Set) {
	set, del = tags.Set{}, tags.Set{}
	for name, v := range patch.Set {
		if old, ok := cur[name]; !ok || old != v {
			set[name] = v
		}
	}
	for _, name := range patch.Delete {
		if _, alsoSet := patch.Set[name]; alsoSet {
			continue
		}
		if v, ok := cur[name]; ok {
			del[name] = v
		}
	}
	return set, del
}

// applyOps returns cur with del removed and set added, refusing a result
// over AWS's tag limit.
func applyOps(what string, cur, set, del tags.Set) (tags.Set, error) {
	next := tags.Patch{Set: set, Delete: del.Names()}.Apply(tags.CaseSensitive, cur)
	if limit := TagRules.MaxTags; len(next) > limit && len(next) > len(cur) {
		return nil, fmt.Errorf("aws: setting %s on %s would leave %d tags; a resource may carry at most %d: %w",
			strings.Join(set.Names(), ", "), what, len(next), limit, cloud.ErrTooManyTags)
	}
	return next, nil
}

// ec2TagList converts a Set to EC2 tags, sorted by name.
func ec2TagList(s tags.Set) []ec2types.Tag {
	out := make([]ec2types.Tag, 0, len(s))
	for _, name := range s.Names() {
		out = append(out, ec2types.Tag{Key: sdkaws.String(name), Value: sdkaws.String(s[name])})
	}
	return out
}

// writeEC2 deletes del (conditional on their values) and then sets set on
// EC2 resources ids of region, batched and isolated as WriteTags does, and
// returns the errors of the resources it failed on.
func (p *Provider) writeEC2(ctx context.Context, region string, ids []string, set, del tags.Set) map[string]error {
	return p.sendEC2(ctx, region, ids, ec2TagList(set), ec2TagList(del))
}

// sendEC2 sends one DeleteTags of del (a tag with a value deletes it only
// where it holds that value), then one CreateTags of set for the resources
// the delete did not fail on, each batched and isolated; it returns the
// errors of the resources it failed on.
func (p *Provider) sendEC2(ctx context.Context, region string, ids []string, set, del []ec2types.Tag) map[string]error {
	failed := map[string]error{}
	if len(del) > 0 {
		p.batch(ctx, region, opDeleteTags, del, ids, failed)
	}
	if len(set) > 0 {
		rest := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return failed[id] != nil })
		p.batch(ctx, region, opCreateTags, set, rest, failed)
	}
	return failed
}

// patchable is one node resource PatchTags writes, once read afresh.
type patchable struct {
	what string   // the resource in words, for messages
	id   string   // its ARN
	cur  tags.Set // its tags, as read
	// write sends the change (set, del) that leaves next, and caches next.
	write func(set, del, next tags.Set) error
	// forget drops the resource's cached reads.
	forget func()
}

// apply writes what patch changes in r's tags and returns them afterwards.
func (r patchable) apply(patch tags.Patch) (cloud.Resource, error) {
	set, del := tagOps(r.cur, patch)
	if len(set) == 0 && len(del) == 0 {
		return cloud.Resource{ID: r.id, Tags: r.cur.Clone()}, nil
	}
	next, err := applyOps(r.what, r.cur, set, del)
	if err == nil {
		err = r.write(set, del, next)
	}
	if err != nil {
		r.forget()
		return cloud.Resource{}, err
	}
	return cloud.Resource{ID: r.id, Tags: next.Clone()}, nil
}

// notFound is the error of a resource PatchTags found missing.
func notFound(what, region string) error {
	return fmt.Errorf("aws: %s not found in %s: %w", what, region, cloud.ErrNotFound)
}

// patchOne reads the resource at k afresh (read) and applies patch to it as
// the patchable that build makes of it says. A missing resource fails with
// cloud.ErrNotFound; after any failure the resource's cached read (in
// cache) is dropped.
func patchOne[T any](p *Provider, k regionalID, what string, cache *map[regionalID]cachedAt[T], patch tags.Patch,
	read func() (map[regionalID]T, error), build func(T) patchable,
) (cloud.Resource, error) {
	forget := func() { cacheDrop(&p.nodes, cache, k) }
	found, err := read()
	if err != nil {
		return cloud.Resource{}, err
	}
	v, ok := found[k]
	if !ok {
		forget()
		return cloud.Resource{}, notFound(what, k.region)
	}
	r := build(v)
	r.what, r.forget = what, forget
	return r.apply(patch)
}

// patchInstance patches an EC2 instance's tags.
func (p *Provider) patchInstance(ctx context.Context, ref resourceRef, patch tags.Patch) (res cloud.Resource, err error) {
	p.patchInstances(ctx, ref.region, []resourceRef{ref}, patch, func(_ string, r cloud.Resource, e error) { res, err = r, e })
	return res, err
}

// patchBatch is the fresh batch write (cloud.WriteFresh, the node sync's
// write): patch applied to each of ids as PatchTags does, each one's
// result reported to each as soon as it is known. An instance that the node sync read (or wrote)
// less than WriteReadAge ago is taken as that read says, so the pass that
// just read it (Snapshot) and decided the patch from that read does not
// read it again; the others are read afresh with one DescribeInstances
// per region and MaxFilterValues of them (EC2's limit on one filter's
// values; a failed read fails only its instances). Those whose change is identical
// (the same names set to the same values, the same names deleted with the
// same values read) are written with one DeleteTags (each name with its
// value read: EC2 deletes it only where it still has that value) and one
// CreateTags per MaxIDsPerCall. Auto Scaling groups are patched one by one
// as PatchTags does.
func (p *Provider) patchBatch(ctx context.Context, ids []string, patch tags.Patch, each func(id string, res cloud.Resource, err error)) {
	var regions []string
	byRegion := map[string][]resourceRef{}
	for _, id := range ids {
		ref, err := p.instanceRef(id, patch)
		switch {
		case errors.Is(err, errNotInstance):
			res, perr := p.PatchTags(ctx, id, patch)
			each(id, res, perr)
			continue
		case err != nil:
			each(id, cloud.Resource{}, err)
			continue
		}
		if _, ok := byRegion[ref.region]; !ok {
			regions = append(regions, ref.region)
		}
		byRegion[ref.region] = append(byRegion[ref.region], ref)
	}
	for _, region := range regions {
		for chunk := range slices.Chunk(byRegion[region], p.opts.maxIDsPerCall) {
			p.patchInstances(ctx, region, chunk, patch, each)
		}
	}
}

// errNotInstance is instanceRef's answer for an Auto Scaling group.
var errNotInstance = errors.New("not an EC2 resource")

// instanceRef reads id as an EC2 resource patch may be written to; it
// fails with errNotInstance for an Auto Scaling group.
func (p *Provider) instanceRef(id string, patch tags.Patch) (resourceRef, error) {
	if err := checkReserved(id, patch); err != nil {
		return resourceRef{}, err
	}
	if _, isGroup, err := parseGroupARN(id); err != nil || isGroup {
		return resourceRef{}, cmp.Or(err, errNotInstance)
	}
	return p.parseRef(id)
}

// instanceChange is what a patch changes on one instance, as read.
type instanceChange struct {
	ref  resourceRef
	k    regionalID
	cur  *ec2Instance
	next tags.Set
	// readAt is when cur was read, when it came from the cache (zero:
	// read for this write): the tags written are cached as of that read,
	// so a write never makes an older read look younger.
	readAt time.Time
}

// changeGroup is the instances one change (set, del) applies to alike.
type changeGroup struct {
	set, del  tags.Set
	instances []instanceChange
}

// WriteReadAge is how recent a read of an instance a Fresh write takes
// instead of reading the instance again before writing it: a pass writes
// right after its Snapshot, and what it writes was decided from that
// read, so a second read a moment later only costs a call. (Deletions stay
// conditional on the value read, so a tag changed meanwhile by someone
// else is not deleted; a set only names the keys it changes.) It is below
// DefaultCacheTTL, so a pass served from an older cached read still reads
// afresh before it writes; with the cache off (Options.CacheTTL negative)
// every write reads afresh.
const WriteReadAge = 10 * time.Second

// patchInstances patches instances of one region (at most MaxIDsPerCall):
// the instances read less than WriteReadAge ago as read, the others with
// one fresh read per MaxFilterValues, then one write per distinct change.
func (p *Provider) patchInstances(ctx context.Context, region string, refs []resourceRef, patch tags.Patch,
	each func(id string, res cloud.Resource, err error),
) {
	found, readErr := map[regionalID]*ec2Instance{}, map[string]error{}
	readAt := map[regionalID]time.Time{} // of the instances taken from the cache
	var ec2IDs []string
	for _, ref := range refs {
		k := regionalID{region, ref.ec2ID}
		if in, at, ok := cacheGetAt(&p.nodes, &p.nodes.instances, k, min(WriteReadAge, p.opts.CacheTTL)); ok && in != nil {
			found[k], readAt[k] = in, at
		} else {
			ec2IDs = append(ec2IDs, ref.ec2ID)
		}
	}
	// EC2 takes at most MaxFilterValues values in one filter: read in as
	// many calls, and fail only the instances of a call that failed.
	for chunk := range slices.Chunk(ec2IDs, min(p.opts.maxIDsPerCall, MaxFilterValues)) {
		got, err := patientRead(ctx, p, func() (map[regionalID]*ec2Instance, error) { return p.describeInstances(ctx, region, chunk) })
		if err != nil {
			for _, id := range chunk {
				readErr[id] = err
			}
			continue
		}
		maps.Copy(found, got)
	}
	var order []string
	groups := map[string]*changeGroup{}
	for _, ref := range refs {
		if err := readErr[ref.ec2ID]; err != nil {
			each(ref.id, cloud.Resource{}, err)
			continue
		}
		c, set, del, err := p.instanceChange(region, ref, found, patch)
		c.readAt = readAt[c.k]
		switch {
		case err != nil:
			each(ref.id, cloud.Resource{}, err)
		case c.next == nil:
			each(ref.id, cloud.Resource{ID: c.cur.arn, Tags: c.cur.tags.Clone()}, nil)
		default:
			key := changeKey(set, del)
			if groups[key] == nil {
				order = append(order, key)
				groups[key] = &changeGroup{set: set, del: del}
			}
			groups[key].instances = append(groups[key].instances, c)
		}
	}
	for _, key := range order {
		p.writeChange(ctx, region, groups[key], each)
	}
}

// instanceChange works out what patch changes on the instance ref as
// found: c.next is nil when nothing. A missing instance fails with
// cloud.ErrNotFound, a change past the tag limit with cloud.ErrTooManyTags;
// either drops the instance's cached read.
func (p *Provider) instanceChange(region string, ref resourceRef, found map[regionalID]*ec2Instance, patch tags.Patch) (c instanceChange, set, del tags.Set, err error) {
	c = instanceChange{ref: ref, k: regionalID{region, ref.ec2ID}}
	what := "EC2 instance " + ref.ec2ID
	cur, ok := found[c.k]
	if !ok {
		cacheDrop(&p.nodes, &p.nodes.instances, c.k)
		return c, nil, nil, notFound(what, region)
	}
	c.cur = cur
	set, del = tagOps(cur.tags, patch)
	if len(set) == 0 && len(del) == 0 {
		return c, nil, nil, nil
	}
	if c.next, err = applyOps(what, cur.tags, set, del); err != nil {
		cacheDrop(&p.nodes, &p.nodes.instances, c.k)
	}
	return c, set, del, err
}

// writeChange writes one change to its instances in as few calls as EC2
// allows and reports each instance's result; a written instance's new
// tags are cached, a failed one's cached read dropped.
func (p *Provider) writeChange(ctx context.Context, region string, g *changeGroup, each func(id string, res cloud.Resource, err error)) {
	ids := make([]string, len(g.instances))
	for i, c := range g.instances {
		ids[i] = c.ref.ec2ID
	}
	failed := p.writeEC2Patiently(ctx, region, ids, g.set, g.del)
	for _, c := range g.instances {
		if err := failed[c.ref.ec2ID]; err != nil {
			cacheDrop(&p.nodes, &p.nodes.instances, c.k)
			each(c.ref.id, cloud.Resource{}, err)
			continue
		}
		written := &ec2Instance{arn: c.cur.arn, group: c.cur.group, tags: c.next}
		if c.readAt.IsZero() {
			cachePut(&p.nodes, &p.nodes.instances, c.k, written)
		} else {
			cachePutAt(&p.nodes, &p.nodes.instances, c.k, written, c.readAt)
		}
		each(c.ref.id, cloud.Resource{ID: c.cur.arn, Tags: c.next.Clone()}, nil)
	}
}

// changeKey names a change (set, del) unambiguously: changes with equal
// keys can be written in one call. fmt prints maps sorted by key.
func changeKey(set, del tags.Set) string {
	return fmt.Sprintf("%q %q", map[string]string(set), map[string]string(del))
}
