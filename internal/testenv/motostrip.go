package testenv

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// AWSStripper is another writer of the same resources: a controller that
// keeps a resource's tags to its own set and removes every other tag, as
// the AWS Load Balancer Controller does with the load balancers it
// manages (it removes tags it does not own unless its
// --external-managed-tags names them: aws-load-balancer-controller#2822).
// It acts on every tag write by another caller of one of its resources,
// before that write's answer leaves (so the writer's next read finds its
// tags gone), with the resource's own API (Elastic Load Balancing's
// RemoveTags, EC2's DeleteTags) as its own identity; its write's events
// are delivered as any other's (DeliverEvents).
type AWSStripper struct {
	// Resources are the ARNs it manages.
	Resources []string
	// Keep are the keys it leaves: its own and those it is told others
	// manage. Keys starting with aws: are never removed.
	Keep []string
	// AccessKey is the access key it calls with; SetIdentity names it in
	// its CloudTrail events.
	AccessKey string
}

// stripper is an AWSStripper at work; strips counts its writes.
type stripper struct {
	AWSStripper
	strips int
}

// AddStripper starts s; the returned function stops it and says how many
// writes it made.
func (a *AWSRules) AddStripper(s AWSStripper) (remove func() int) {
	a.events.mu.Lock()
	defer a.events.mu.Unlock()
	st := &stripper{AWSStripper: s}
	a.events.strippers = append(a.events.strippers, st)
	return func() int {
		a.events.mu.Lock()
		defer a.events.mu.Unlock()
		a.events.strippers = slices.DeleteFunc(a.events.strippers, func(x *stripper) bool { return x == st })
		return st.strips
	}
}

// strip lets every stripper act on c: each removes from its resources c
// wrote the keys it does not keep.
func (a *AWSRules) strip(ctx context.Context, c tagCall) {
	a.events.mu.Lock()
	strippers := slices.Clone(a.events.strippers)
	a.events.mu.Unlock()
	for _, s := range strippers {
		if s.AccessKey == c.caller.accessKey {
			continue
		}
		for _, r := range c.resources {
			if !slices.Contains(s.Resources, r.arn) {
				continue
			}
			var drop []string
			for k := range r.after {
				if !slices.Contains(s.Keep, k) && !isAWSKey(k) {
					drop = append(drop, k)
				}
			}
			if len(drop) == 0 {
				continue
			}
			slices.Sort(drop)
			if a.stripOne(ctx, s, c.caller, r, drop) {
				a.events.mu.Lock()
				s.strips++
				a.events.mu.Unlock()
			}
		}
	}
}

// stripOne removes drop from r with its service's own API as s, and
// publishes the write's events.
func (a *AWSRules) stripOne(ctx context.Context, s *stripper, by awsCaller, r resourceChange, drop []string) bool {
	caller := awsCaller{accessKey: s.AccessKey, region: by.region, account: by.account}
	cfg := caller.config(a.direct)
	p, err := arn.Parse(r.arn)
	if err != nil {
		return false
	}
	call := tagCall{caller: caller, service: p.Service, removed: drop, at: time.Now()}
	after := maps.Clone(r.after)
	for _, k := range drop {
		delete(after, k)
	}
	switch p.Service {
	case "elasticloadbalancing":
		call.action, call.ids = "RemoveTags", []string{r.arn}
		_, err = elbv2.NewFromConfig(cfg).RemoveTags(ctx, &elbv2.RemoveTagsInput{ResourceArns: call.ids, TagKeys: drop})
	case "ec2":
		id := p.Resource[strings.LastIndex(p.Resource, "/")+1:]
		call.action, call.ids = "DeleteTags", []string{id}
		var tags []ec2types.Tag
		for _, k := range drop {
			tags = append(tags, ec2types.Tag{Key: &k})
		}
		_, err = ec2.NewFromConfig(cfg).DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: call.ids, Tags: tags})
	default:
		return false
	}
	if err != nil {
		return false
	}
	call.resources = []resourceChange{{arn: r.arn, before: r.after, after: after}}
	a.publish(call)
	return true
}
