package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	tagging "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	taggingtypes "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/types"
	"github.com/aws/smithy-go"
)

// The Resource Groups Tagging API's write limits, from its API reference
// (TagResources, https://docs.aws.amazon.com/resourcegroupstagging/latest/APIReference/API_TagResources.html,
// and UntagResources): ResourceARNList "Minimum number of 1 item. Maximum
// number of 20 items"; Tags "Map Entries: Maximum number of 50 items",
// keys 1 to 128 characters, values 0 to 256; TagKeys 1 to 50 items. A
// request outside them is refused whole with InvalidParameterException
// (HTTP 400). moto 5.2.1 checks none of them.
const (
	MaxTaggingWriteARNs   = 20
	MaxTaggingWriteTags   = 50
	MaxTaggingKeyLength   = 128
	MaxTaggingValueLength = 256
)

// MaxELBTags is the most tags an Elastic Load Balancing resource (load
// balancer, target group) carries: Elastic Load Balancing's quotas page
// ("Tags per load balancer: 50"; Application Load Balancer and Network
// Load Balancer user guides, "Quotas"). AddTags beyond it answers
// TooManyTags. moto 5.2.1 refuses an eleventh tag (the old quota of 10),
// so tests on it stay within 10 tags per load balancer.
const MaxELBTags = 50

// taggingWrite is the part of a TagResources or UntagResources request
// the rules read.
type taggingWrite struct {
	ResourceARNList []string
	Tags            map[string]string
	TagKeys         []string
}

// failureInfo is one entry of FailedResourcesMap.
type failureInfo struct {
	StatusCode   int
	ErrorCode    string
	ErrorMessage string
}

// serveTaggingWrite answers TagResources and UntagResources as AWS does:
// it refuses a request outside the API's limits, writes Elastic Load
// Balancing resources (which moto's Tagging API does not: "Service not yet
// supported") through Elastic Load Balancing's own AddTags and RemoveTags
// one resource at a time, passes the other ARNs to moto in one call, and
// reports each resource that could not be written in FailedResourcesMap
// while the call itself succeeds, as AWS does. Writes to load balancers
// reach GetResources after the indexing delay, as EC2's do.
func (a *AWSRules) serveTaggingWrite(w http.ResponseWriter, r *http.Request, caller awsCaller, untag bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in taggingWrite
	if err := json.Unmarshal(body, &in); err != nil {
		writeJSONError(w, http.StatusBadRequest, "InvalidParameterException", err.Error())
		return
	}
	if msg := taggingWriteRefusal(in, untag); msg != "" {
		writeJSONError(w, http.StatusBadRequest, "InvalidParameterException", msg)
		return
	}
	failed := map[string]failureInfo{}
	observed := a.observed()
	var rest []string
	var changes []resourceChange
	for _, id := range in.ResourceARNList {
		if p, err := arn.Parse(id); err != nil || p.Service != "elasticloadbalancing" {
			rest = append(rest, id)
		} else if ch, f, ok := a.writeELB(r.Context(), caller, id, in, untag, observed); !ok {
			failed[id] = f
		} else if observed {
			changes = append(changes, ch)
		}
	}
	if len(rest) > 0 {
		ch, err := a.passTaggingWrite(r.Context(), caller, rest, in, untag, failed, observed)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		changes = append(changes, ch...)
	}
	if observed {
		call := tagCall{caller: caller, service: "tagging", action: "TagResources", set: in.Tags, ids: in.ResourceARNList, resources: changes, at: time.Now()}
		if untag {
			call.action, call.set, call.removed = "UntagResources", nil, in.TagKeys
		}
		a.wrote(r.Context(), call)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(struct{ FailedResourcesMap map[string]failureInfo }{failed})
}

// taggingWriteRefusal returns the message the Tagging API refuses a write
// with, or "" when it takes it.
func taggingWriteRefusal(in taggingWrite, untag bool) string {
	if n := len(in.ResourceARNList); n < 1 || n > MaxTaggingWriteARNs {
		return fmt.Sprintf("ResourceARNList has %d ARNs; it takes 1 to %d", n, MaxTaggingWriteARNs)
	}
	keys := in.TagKeys
	if !untag {
		keys = keys[:0]
		for k := range in.Tags {
			keys = append(keys, k)
		}
	}
	if n := len(keys); n < 1 || n > MaxTaggingWriteTags {
		return fmt.Sprintf("the request names %d tags; it takes 1 to %d", n, MaxTaggingWriteTags)
	}
	for _, k := range keys {
		switch {
		case isAWSKey(k):
			return fmt.Sprintf("tag key %s starts with aws:, which is reserved for AWS", k)
		case utf8.RuneCountInString(k) < 1 || utf8.RuneCountInString(k) > MaxTaggingKeyLength:
			return fmt.Sprintf("tag key %q is not 1 to %d characters long", k, MaxTaggingKeyLength)
		case !untag && utf8.RuneCountInString(in.Tags[k]) > MaxTaggingValueLength:
			return fmt.Sprintf("the value of tag %s is longer than %d characters", k, MaxTaggingValueLength)
		}
	}
	return ""
}

// writeELB writes one Elastic Load Balancing resource's tags through
// moto's AddTags or RemoveTags, enforcing MaxELBTags, and records the
// write for the indexing delay; a refusal becomes the resource's
// FailedResourcesMap entry. When observed, it returns the resource's tags
// before and after.
func (a *AWSRules) writeELB(ctx context.Context, caller awsCaller, id string, in taggingWrite, untag, observed bool) (resourceChange, failureInfo, bool) {
	c := elbv2.NewFromConfig(caller.config(a.direct))
	before, err := elbTags(ctx, c, id)
	if err == nil && !untag {
		n := len(before)
		for k := range in.Tags {
			if _, ok := before[k]; !ok {
				n++
			}
		}
		if n > MaxELBTags {
			return resourceChange{}, failureInfo{StatusCode: 400, ErrorCode: "TooManyTags", ErrorMessage: fmt.Sprintf("%s would carry %d tags; at most %d are allowed", id, n, MaxELBTags)}, false
		}
	}
	if err == nil && untag {
		_, err = c.RemoveTags(ctx, &elbv2.RemoveTagsInput{ResourceArns: []string{id}, TagKeys: in.TagKeys})
	} else if err == nil {
		var t []elbv2types.Tag
		for k, v := range in.Tags {
			t = append(t, elbv2types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		_, err = c.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{id}, Tags: t})
	}
	if err != nil {
		f := failureInfo{StatusCode: 500, ErrorCode: "InternalServiceException", ErrorMessage: err.Error()}
		var ae smithy.APIError
		if errors.As(err, &ae) {
			f = failureInfo{StatusCode: 400, ErrorCode: ae.ErrorCode(), ErrorMessage: ae.ErrorMessage()}
		}
		return resourceChange{}, f, false
	}
	change := resourceChange{arn: id, before: before}
	if a.indexDelay() > 0 || observed {
		if after, err := elbTags(ctx, c, id); err == nil {
			change.after = after
			if a.indexDelay() > 0 {
				a.remember(caller, map[string]map[string]string{indexKey(id): before}, map[string]map[string]string{indexKey(id): after})
			}
		}
	}
	return change, failureInfo{}, true
}

// elbTags reads one Elastic Load Balancing resource's tags from moto.
func elbTags(ctx context.Context, c *elbv2.Client, id string) (map[string]string, error) {
	out, err := c.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{id}})
	if err != nil {
		return nil, err
	}
	tags := map[string]string{}
	for _, d := range out.TagDescriptions {
		for _, t := range d.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	return tags, nil
}

// passTaggingWrite sends the write for arns to moto's Tagging API and adds
// what it could not write to failed. When observed, it returns the tags
// before and after of the EC2 resources it wrote (the others' are not
// read: their events carry no tag change).
func (a *AWSRules) passTaggingWrite(ctx context.Context, caller awsCaller, arns []string, in taggingWrite, untag bool, failed map[string]failureInfo, observed bool) ([]resourceChange, error) {
	ec2IDs := map[string]string{}
	if observed {
		for _, id := range arns {
			if p, err := arn.Parse(id); err == nil && p.Service == "ec2" {
				ec2IDs[id] = indexKey(p.Resource)
			}
		}
	}
	before, err := a.currentTags(ctx, caller, slices.Collect(maps.Values(ec2IDs)))
	if err != nil {
		return nil, err
	}
	c := tagging.NewFromConfig(caller.config(a.direct))
	var bad map[string]taggingtypes.FailureInfo
	if untag {
		out, err := c.UntagResources(ctx, &tagging.UntagResourcesInput{ResourceARNList: arns, TagKeys: in.TagKeys})
		if err != nil {
			return nil, err
		}
		bad = out.FailedResourcesMap
	} else {
		out, err := c.TagResources(ctx, &tagging.TagResourcesInput{ResourceARNList: arns, Tags: in.Tags})
		if err != nil {
			return nil, err
		}
		bad = out.FailedResourcesMap
	}
	for id, f := range bad {
		failed[id] = failureInfo{int(f.StatusCode), string(f.ErrorCode), aws.ToString(f.ErrorMessage)}
	}
	after, err := a.currentTags(ctx, caller, slices.Collect(maps.Values(ec2IDs)))
	if err != nil {
		return nil, nil // the write is done; without its after state it has no tag change events
	}
	var changes []resourceChange
	for id, short := range ec2IDs {
		if _, bad := failed[id]; !bad {
			changes = append(changes, resourceChange{arn: id, before: before[short], after: after[short]})
		}
	}
	return changes, nil
}

// indexKey is the key of a resource in the tag index: its ID after the
// ARN's last slash, as GetResources' answers are matched.
func indexKey(id string) string { return id[strings.LastIndex(id, "/")+1:] }

// hasARNList reports whether a GetResources request names its resources
// by ResourceARNList (and keeps its body readable).
func hasARNList(r *http.Request) bool {
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in struct{ ResourceARNList []string }
	return err == nil && json.Unmarshal(body, &in) == nil && len(in.ResourceARNList) > 0
}
