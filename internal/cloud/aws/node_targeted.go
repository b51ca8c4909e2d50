package aws

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/arn"
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
