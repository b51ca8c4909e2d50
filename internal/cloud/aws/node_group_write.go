package aws

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// groupNameMarker precedes the group's name in an Auto Scaling group ARN.
const groupNameMarker = ":autoScalingGroupName/"

// groupRef is an Auto Scaling group named by its ARN.
type groupRef struct{ region, name string }

// parseGroupARN reads an Auto Scaling group's ARN,
// arn:aws:autoscaling:<region>:<account>:autoScalingGroup:<uuid>:autoScalingGroupName/<name>.
// ok is false for an ARN of another service, or no ARN.
func parseGroupARN(id string) (ref groupRef, ok bool, err error) {
	a, perr := arn.Parse(id)
	if perr != nil || a.Service != "autoscaling" {
		return groupRef{}, false, nil
	}
	_, name, found := strings.Cut(a.Resource, groupNameMarker[1:])
	if !found || name == "" || a.Region == "" {
		return groupRef{}, true, fmt.Errorf("aws: %s is not an Auto Scaling group ARN (want arn:aws:autoscaling:<region>:<account>:autoScalingGroup:<uuid>%s<name>)",
			id, groupNameMarker)
	}
	return groupRef{region: a.Region, name: name}, true, nil
}

// patchGroup patches an Auto Scaling group's tags and its instances'.
func (p *Provider) patchGroup(ctx context.Context, ref groupRef, patch tags.Patch) (cloud.Resource, error) {
	k := regionalID{ref.region, ref.name}
	read := func() (map[regionalID]*asGroup, error) {
		return patientRead(ctx, p, func() (map[regionalID]*asGroup, error) { return p.describeGroups(ctx, ref.region, []string{ref.name}) })
	}
	return patchOne(p, k, fmt.Sprintf("Auto Scaling group %q", ref.name), &p.nodes.groups, patch, read, func(g *asGroup) patchable {
		return patchable{id: g.arn, cur: g.tags, write: func(set, del, next tags.Set) error {
			if err := p.writeGroupTags(ctx, ref, g, set, del); err != nil {
				return err
			}
			cachePut(&p.nodes, &p.nodes.groups, k, &asGroup{arn: g.arn, name: g.name, tags: next, instances: g.instances, noPropagate: g.noPropagate})
			for _, id := range g.instances {
				cacheDrop(&p.nodes, &p.nodes.instances, regionalID{ref.region, id})
			}
			propagated := maps.Clone(set)
			maps.DeleteFunc(propagated, func(name, _ string) bool { return !g.propagates(name) })
			if failed := p.writeEC2Patiently(ctx, ref.region, g.instances, propagated, del); len(failed) > 0 {
				return instancesFailed(ref, len(g.instances), failed)
			}
			return nil
		}}
	})
}

// MaxGroupTagsPerCall is the most tags of one Auto Scaling group tagsync
// names in one Auto Scaling CreateOrUpdateTags or DeleteTags call. The Auto
// Scaling API reference states no limit on a call's Tags.member.N, but a
// group holds at most 50 tags (Auto Scaling user guide, "Tag your Auto
// Scaling groups", tag restrictions), so a call naming more for one group
// is refused.
const MaxGroupTagsPerCall = 50

// groupTagCall is one Auto Scaling tag call of writeGroupTags: the tags it
// deletes (del) or sets.
type groupTagCall struct {
	del  bool
	tags tags.Set
}

// groupTagCalls splits the deletion of del and the setting of set into
// calls of at most MaxGroupTagsPerCall tags, deletions first.
func groupTagCalls(set, del tags.Set) []groupTagCall {
	var out []groupTagCall
	for _, c := range []struct {
		del bool
		s   tags.Set
	}{{true, del}, {false, set}} {
		for names := range slices.Chunk(c.s.Names(), MaxGroupTagsPerCall) {
			part := make(tags.Set, len(names))
			for _, n := range names {
				part[n] = c.s[n]
			}
			out = append(out, groupTagCall{del: c.del, tags: part})
		}
	}
	return out
}

// writeGroupTags changes the tags of the group ref from g's (as read) by
// deleting del and setting set (each tag keeping the PropagateAtLaunch read,
// a new one with PropagateAtLaunch true), with Auto Scaling's
// DeleteTags and CreateOrUpdateTags, MaxGroupTagsPerCall tags a call. It
// never leaves the change half applied on purpose: when a call fails after
// others were answered, the written tags are put back as read (a deleted or
// overwritten tag is set again with its old value and PropagateAtLaunch,
// and a tag that was new is deleted). The error names the call that failed
// and which keys are left written and which not (all not written when the
// undo succeeded), and wraps the failed call's error (its cloud kind).
func (p *Provider) writeGroupTags(ctx context.Context, ref groupRef, g *asGroup, set, del tags.Set) error {
	var done []groupTagCall
	for _, call := range groupTagCalls(set, del) {
		if err := p.patiently(ctx, func() error { return p.sendGroupTags(ctx, ref, g, call) }); err != nil {
			return p.groupWriteFailed(ctx, ref, g, set, del, done, err)
		}
		done = append(done, call)
	}
	return nil
}

// sendGroupTags sends one Auto Scaling tag call. A tag keeps the
// PropagateAtLaunch the group read g has for it (false stays false); a new
// tag propagates.
func (p *Provider) sendGroupTags(ctx context.Context, ref groupRef, g *asGroup, call groupTagCall) error {
	c := p.clientsFor(ref.region).autoscaling
	list := make([]astypes.Tag, 0, len(call.tags))
	for _, name := range call.tags.Names() {
		list = append(list, astypes.Tag{ResourceId: sdkaws.String(ref.name), ResourceType: sdkaws.String("auto-scaling-group"),
			Key: sdkaws.String(name), Value: sdkaws.String(call.tags[name]), PropagateAtLaunch: sdkaws.Bool(g.propagates(name))})
	}
	op, err := "CreateOrUpdateTags", error(nil)
	if call.del {
		op = "DeleteTags"
		_, err = c.DeleteTags(ctx, &autoscaling.DeleteTagsInput{Tags: list})
	} else {
		_, err = c.CreateOrUpdateTags(ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: list})
	}
	if err != nil {
		return p.wrap(ref.region, fmt.Sprintf("aws: %s %s on Auto Scaling group %q in %s",
			op, strings.Join(call.tags.Names(), ", "), ref.name, ref.region), err)
	}
	return nil
}

// groupUndoTimeout bounds the calls that undo a half-written group change.
const groupUndoTimeout = 30 * time.Second

// groupWriteFailed undoes the calls done of a group change that failed with
// err and returns the error that says what is left written.
func (p *Provider) groupWriteFailed(ctx context.Context, ref groupRef, g *asGroup, set, del tags.Set, done []groupTagCall, err error) error {
	cur := g.tags
	changed := append(set.Names(), del.Names()...)
	slices.Sort(changed)
	var written []string
	for _, call := range done {
		written = append(written, call.tags.Names()...)
	}
	slices.Sort(written)
	if len(written) > 0 {
		restore, remove := tags.Set{}, tags.Set{}
		for _, name := range written {
			if v, ok := cur[name]; ok {
				restore[name] = v
			} else {
				remove[name] = set[name]
			}
		}
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupUndoTimeout)
		defer cancel()
		var undone []string
		for _, call := range groupTagCalls(restore, remove) {
			if p.sendGroupTags(uctx, ref, g, call) != nil {
				break
			}
			undone = append(undone, call.tags.Names()...)
		}
		written = slices.DeleteFunc(written, func(name string) bool { return slices.Contains(undone, name) })
	}
	notWritten := slices.DeleteFunc(slices.Clone(changed), func(name string) bool { return slices.Contains(written, name) })
	if len(written) == 0 {
		return fmt.Errorf("aws: Auto Scaling group %q in %s left as it was (not written: %s): %w",
			ref.name, ref.region, strings.Join(notWritten, ", "), err)
	}
	return fmt.Errorf("aws: Auto Scaling group %q in %s half changed, and undoing it failed (written: %s; not written: %s): %w",
		ref.name, ref.region, strings.Join(written, ", "), cmp.Or(strings.Join(notWritten, ", "), "none"), err)
}

// instancesFailed is the error of a group written whose instances were not
// all tagged: it names how many failed and carries the first one's error
// (and so its cloud kind).
func instancesFailed(ref groupRef, total int, failed map[string]error) error {
	ids := make([]string, 0, len(failed))
	for id := range failed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return fmt.Errorf("aws: Auto Scaling group %q in %s was tagged, but %d of its %d instances (%s, ...) were not: %w",
		ref.name, ref.region, len(ids), total, ids[0], failed[ids[0]])
}
