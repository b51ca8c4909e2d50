package aws

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/tagsync/tagsync/internal/cloud"
)

// providerIDScheme starts every AWS node providerID.
const providerIDScheme = "aws://"

// TagAutoScalingGroup is the tag EC2 Auto Scaling puts on every instance it
// launches: the name of the instance's group.
const TagAutoScalingGroup = "aws:autoscaling:groupName"

// nodeRef is where a node's providerID says it runs.
type nodeRef struct {
	zone, region, instanceID string
}

// zoneRegion matches the region at the start of a zone name: us-east-1 in
// us-east-1a (an Availability Zone), us-west-2-lax-1a (a Local Zone) and
// us-east-1-wl1-bos-wlz-1 (a Wavelength Zone).
var zoneRegion = regexp.MustCompile(`^[a-z]+(?:-[a-z]+)+-[0-9]+`)

// regionOfZone returns the region a zone belongs to. Availability Zones are
// the region and a letter (us-east-1a); Local Zones (us-west-2-lax-1a) and
// Wavelength Zones (us-east-1-wl1-bos-wlz-1) are the parent region, a dash
// and the zone's own name, and their instances are EC2 instances of the
// parent region (Outposts name their parent's Availability Zone). So the
// region is the zone's leading name-dash-number.
func regionOfZone(zone string) (string, bool) {
	r := zoneRegion.FindString(zone)
	return r, r != ""
}

// parseProviderID reads a node's spec.providerID, aws:///<zone>/<instance-id>
// (aws:////<instance-id> without a zone: the provider's region). It returns
// an unmanaged placement's reason when the providerID names no EC2 instance:
// empty, another cloud's, a Fargate node's, or an unknown shape.
func (p *Provider) parseProviderID(id string) (nodeRef, string) {
	switch {
	case id == "":
		return nodeRef{}, "no providerID"
	case !strings.HasPrefix(id, providerIDScheme):
		return nodeRef{}, fmt.Sprintf("providerID %q is not an AWS providerID", id)
	case strings.Contains(id, "fargate"):
		return nodeRef{}, fmt.Sprintf("Fargate pods' nodes carry no EC2 tags (providerID %q)", id)
	}
	var parts []string
	for _, s := range strings.Split(strings.TrimPrefix(id, providerIDScheme), "/") {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 || len(parts) > 2 || !strings.HasPrefix(parts[len(parts)-1], "i-") {
		return nodeRef{}, fmt.Sprintf("providerID %q names no EC2 instance (want aws:///<zone>/i-...)", id)
	}
	ref := nodeRef{instanceID: parts[len(parts)-1], region: p.region}
	if len(parts) == 2 {
		region, ok := regionOfZone(parts[0])
		if !ok {
			return nodeRef{}, fmt.Sprintf("providerID %q names zone %q, which belongs to no AWS region", id, parts[0])
		}
		ref.zone, ref.region = parts[0], region
	}
	return ref, ""
}

// regionScope names a region as a scope, in the words of Placement.Scope and
// ScopeError.Scope.
func regionScope(region string) string { return "region " + region }

// inScopes reports whether region passes ReadOptions.Scopes (region names;
// empty: all).
func inScopes(region string, scopes []string) bool {
	if len(scopes) == 0 {
		return true
	}
	for _, s := range scopes {
		if s == region {
			return true
		}
	}
	return false
}

// unmanaged is the placement of a node tagsync does not sync.
func unmanaged(format string, args ...any) cloud.Placement {
	return cloud.Placement{Reason: fmt.Sprintf(format, args...)}
}

// instanceARN is the ARN of an EC2 instance.
func instanceARN(region, account, id string) string {
	return fmt.Sprintf("arn:%s:ec2:%s:%s:instance/%s", partitionOf(region), region, account, id)
}

// partitionOf returns the AWS partition of a region.
func partitionOf(region string) string {
	for _, p := range []struct{ prefix, partition string }{
		{"cn-", "aws-cn"}, {"us-gov-", "aws-us-gov"}, {"us-isob-", "aws-iso-b"}, {"us-isof-", "aws-iso-f"},
		{"us-iso-", "aws-iso"}, {"eu-isoe-", "aws-iso-e"}, {"eusc-", "aws-eusc"},
	} {
		if strings.HasPrefix(region, p.prefix) {
			return p.partition
		}
	}
	return "aws"
}
