package aws

import (
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/arn"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// changed are the resources a targeted Snapshot reads fresh
// (cloud.ReadOptions.Resources): EC2 instances by region and ID, Auto
// Scaling groups by region and lower-cased name (the canonical IDs are
// lower-cased, and AWS group names are not; two groups whose names differ
// only in case are both read).
type changed struct {
	instances, groups map[regionalID]bool
}

// changedResources parses the canonical ARNs of a targeted read; nil when
// there are none (a read that is not targeted). IDs that name neither an
// instance nor a group are left out.
func changedResources(ids []string) *changed {
	if len(ids) == 0 {
		return nil
	}
	c := &changed{instances: map[regionalID]bool{}, groups: map[regionalID]bool{}}
	for _, id := range ids {
		a, err := arn.Parse(id)
		if err != nil {
			continue
		}
		switch res := strings.ToLower(a.Resource); a.Service {
		case "ec2":
			if in, ok := strings.CutPrefix(res, "instance/"); ok {
				c.instances[regionalID{a.Region, in}] = true
			}
		case "autoscaling":
			if _, name, ok := strings.Cut(res, strings.ToLower(groupNameMarker[1:])); ok {
				c.groups[regionalID{a.Region, name}] = true
			}
		}
	}
	return c
}

// freshInstance reports whether the instance k must be read, not taken
// from the cache: every one in a fresh read, only the changed ones in a
// targeted read.
func (r *nodeReader) freshInstance(k regionalID) bool {
	if r.changed == nil {
		return r.fresh
	}
	return r.changed.instances[k]
}

// freshGroup is freshInstance for the group k (region and name).
func (r *nodeReader) freshGroup(k regionalID) bool {
	if r.changed == nil {
		return r.fresh
	}
	return r.changed.groups[regionalID{k.region, strings.ToLower(k.ec2ID)}]
}

var _ cloud.CarriedTagsTaker = (*Provider)(nil)

// TakeTags takes the tags a change event carried for an EC2 instance or
// an Auto Scaling group (id: its canonical ARN) into the node sync's
// cache, without the aws: tags, when the cache holds a read of it made
// before at; it reports whether it did. The instance keeps its group; a
// group is found by its name lower-cased, and two cached groups of that
// name take nothing.
func (p *Provider) TakeTags(id string, t tags.Set, at time.Time) bool {
	c := changedResources([]string{id})
	p.nodes.mu.Lock()
	defer p.nodes.mu.Unlock()
	for k := range c.instances {
		if e, ok := p.nodes.instances[k]; ok && e.v != nil && e.at.Before(at) {
			p.nodes.instances[k] = cachedAt[*ec2Instance]{at: at, v: &ec2Instance{arn: e.v.arn, group: e.v.group, tags: userTags(t)}}
			return true
		}
	}
	for k := range c.groups {
		var found []regionalID // the cached groups of that lower-cased name
		for name := range p.nodes.groups {
			if name.region == k.region && strings.ToLower(name.ec2ID) == k.ec2ID {
				found = append(found, name)
			}
		}
		if len(found) != 1 {
			return false
		}
		if e := p.nodes.groups[found[0]]; e.v != nil && e.at.Before(at) {
			g := *e.v
			g.tags = userTags(t)
			p.nodes.groups[found[0]] = cachedAt[*asGroup]{at: at, v: &g}
			return true
		}
	}
	return false
}
