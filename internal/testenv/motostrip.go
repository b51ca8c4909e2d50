package testenv

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
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
	// Set, when not empty, makes it a writer of values instead: it removes
	// nothing, and where another caller's write leaves one of Set's keys
	// with another value, it writes Set's values back (a pipeline or a
	// controller that owns those keys' values: a Terraform apply, a tag
	// policy's remediation), with Elastic Load Balancing's AddTags or EC2's
	// CreateTags.
	Set map[string]string
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
			if len(s.Set) > 0 {
				if a.setBack(ctx, s, c.caller, r) {
					a.events.mu.Lock()
					s.strips++
					a.events.mu.Unlock()
				}
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

// setBack writes s.Set's values on r where r's tags differ from them, with
// its service's own API as s, and publishes the write's events.
func (a *AWSRules) setBack(ctx context.Context, s *stripper, by awsCaller, r resourceChange) bool {
	set := map[string]string{}
	for k, v := range s.Set {
		if got, ok := r.after[k]; !ok || got != v {
			set[k] = v
		}
	}
	p, err := arn.Parse(r.arn)
	if len(set) == 0 || err != nil {
		return false
	}
	caller := awsCaller{accessKey: s.AccessKey, region: by.region, account: by.account}
	cfg := caller.config(a.direct)
	call := tagCall{caller: caller, service: p.Service, set: set, at: time.Now()}
	keys := slices.Sorted(maps.Keys(set))
	switch p.Service {
	case "elasticloadbalancing":
		var tags []elbv2types.Tag
		for _, k := range keys {
			tags = append(tags, elbv2types.Tag{Key: &k, Value: sdkaws.String(set[k])})
		}
		call.action, call.ids = "AddTags", []string{r.arn}
		_, err = elbv2.NewFromConfig(cfg).AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: call.ids, Tags: tags})
	case "ec2":
		var tags []ec2types.Tag
		for _, k := range keys {
			tags = append(tags, ec2types.Tag{Key: &k, Value: sdkaws.String(set[k])})
		}
		call.action, call.ids = "CreateTags", []string{p.Resource[strings.LastIndex(p.Resource, "/")+1:]}
		_, err = ec2.NewFromConfig(cfg).CreateTags(ctx, &ec2.CreateTagsInput{Resources: call.ids, Tags: tags})
	default:
		return false
	}
	if err != nil {
		return false
	}
	after := maps.Clone(r.after)
	maps.Copy(after, set)
	call.resources = []resourceChange{{arn: r.arn, before: r.after, after: after}}
	a.publish(call)
	return true
}
