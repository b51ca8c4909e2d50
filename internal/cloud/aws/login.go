package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	tagging "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	taggingtypes "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
)

// Identity is who the provider's credentials are (STS GetCallerIdentity).
type Identity struct {
	// Account is the AWS account ID.
	Account string `json:"account"`
	// ARN is the caller's ARN (a user, or an assumed role's session).
	ARN string `json:"arn"`
	// UserID is the caller's unique ID.
	UserID string `json:"userID,omitempty"`
}

// WhoAmI resolves the credential chain the provider was built with and
// asks STS who it is. STS needs no permission.
func (p *Provider) WhoAmI(ctx context.Context) (Identity, error) {
	c := sts.NewFromConfig(p.awsCfg)
	out, err := c.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return Identity{}, fmt.Errorf("aws: sts:GetCallerIdentity: %w", err)
	}
	return Identity{Account: sdkaws.ToString(out.Account), ARN: sdkaws.ToString(out.Arn), UserID: sdkaws.ToString(out.UserId)}, nil
}

// Check is one permission check of a login.
type Check struct {
	// Name is the IAM action checked.
	Name string `json:"name"`
	// OK is true when the action is allowed.
	OK bool `json:"ok"`
	// Detail says what was found, or what is missing and why tagsync needs it.
	Detail string `json:"detail,omitempty"`
	// Unchecked is set for an action that cannot be checked without doing
	// it (OK is then false but nothing is known to be missing).
	Unchecked bool `json:"unchecked,omitempty"`
}

// placeholderInstance is the EC2 ID a dry run names when no resource was
// found to name instead.
const placeholderInstance = "i-00000000000000000"

// CheckAccess checks, with cheap calls in the provider's region, what the
// credentials may do: tag:GetResources with a page of one, then
// ec2:CreateTags and ec2:DeleteTags as dry runs (nothing is written) on the
// first EC2 resource found with the tag classifier (name=value; empty:
// any resource), so that a policy conditioned on the resource's tags is
// evaluated on a resource tagsync would write.
//
// Then what the node sync needs: ec2:DescribeInstances (a dry run) and
// autoscaling:DescribeAutoScalingGroups (a page of one). Auto Scaling has
// no dry run, so its tag writes (autoscaling:CreateOrUpdateTags and
// DeleteTags) are listed as not checked rather than tried.
func (p *Provider) CheckAccess(ctx context.Context, classifier string) []Check {
	c := p.clientsFor(p.region)
	get, target := p.checkGetResources(ctx, c.tagging, classifier)
	return []Check{get, dryRun(ctx, c.ec2, "ec2:CreateTags", target, true), dryRun(ctx, c.ec2, "ec2:DeleteTags", target, false),
		describeInstances(ctx, c.ec2), describeGroups(ctx, c.autoscaling),
		{Name: "autoscaling:CreateOrUpdateTags, autoscaling:DeleteTags", Unchecked: true,
			Detail: "not checked (Auto Scaling has no dry run): needed by the node sync to write an Auto Scaling group's tags"}}
}

// CheckQueue checks what the AWS event source needs of the SQS queue at
// queueURL (in region; "" for the provider's): sqs:GetQueueAttributes, a
// read; then events:ListRuleNamesByTarget and events:DescribeRule, with
// which the source checks that an enabled EventBridge rule sends to the
// queue (and whether one does). Receiving and deleting messages cannot be
// checked without taking them from the queue, so those are listed as not
// checked.
func (p *Provider) CheckQueue(ctx context.Context, queueURL, region string) []Check {
	if region == "" {
		region = p.region
	}
	c := sqs.NewFromConfig(p.awsCfg, func(o *sqs.Options) { o.Region = region })
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: sdkaws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	get := Check{Name: "sqs:GetQueueAttributes"}
	checks := []Check{get}
	if err != nil {
		checks[0].Detail = "missing or failed on " + queueURL + ": needed by the AWS event source: " + err.Error()
	} else {
		checks[0].OK, checks[0].Detail = true, "read "+queueURL+" (the AWS event source)"
		rules := eventbridge.NewFromConfig(p.awsCfg, func(o *eventbridge.Options) { o.Region = region })
		checks = append(checks, checkRules(ctx, rules, out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])...)
	}
	return append(checks, Check{Name: "sqs:ReceiveMessage, sqs:DeleteMessage", Unchecked: true,
		Detail: "not checked (it would take messages from the queue): needed by the AWS event source to receive and acknowledge changes"})
}

// checkRules lists the EventBridge rules that send to the queue arn and
// reads the first: the event source does so every 2 minutes, and a queue
// no enabled rule sends to receives nothing.
func checkRules(ctx context.Context, c *eventbridge.Client, arn string) []Check {
	list := Check{Name: "events:ListRuleNamesByTarget"}
	out, err := c.ListRuleNamesByTarget(ctx, &eventbridge.ListRuleNamesByTargetInput{TargetArn: &arn})
	switch {
	case err != nil:
		list.Detail = "missing or failed: needed by the AWS event source to check that a rule sends to " + arn + ": " + err.Error()
		return []Check{list}
	case len(out.RuleNames) == 0:
		list.Detail = "allowed, but no EventBridge rule on the default event bus sends to " + arn + ": the queue receives nothing (docs/events.md)"
		return []Check{list}
	}
	list.OK, list.Detail = true, fmt.Sprintf("%d EventBridge rule(s) send to %s", len(out.RuleNames), arn)
	describe := Check{Name: "events:DescribeRule"}
	if rule, err := c.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: &out.RuleNames[0]}); err != nil {
		describe.Detail = "missing or failed on " + out.RuleNames[0] + ": needed by the AWS event source to tell an enabled rule: " + err.Error()
	} else {
		describe.OK, describe.Detail = true, fmt.Sprintf("read the rule %s (%s)", out.RuleNames[0], rule.State)
	}
	return []Check{list, describe}
}

// describeInstances asks EC2 whether the caller may list instances (a
// dry run): the node sync reads its Nodes' instances so.
func describeInstances(ctx context.Context, c *ec2.Client) Check {
	_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{DryRun: sdkaws.Bool(true), MaxResults: sdkaws.Int32(5)})
	check := Check{Name: "ec2:DescribeInstances"}
	var api smithy.APIError
	switch {
	case errors.As(err, &api) && api.ErrorCode() == "DryRunOperation", err == nil:
		check.OK, check.Detail = true, "read the Nodes' instances (node sync)"
	case errors.As(err, &api) && api.ErrorCode() == "UnauthorizedOperation":
		check.Detail = "missing: needed by the node sync to read its Nodes' instances"
	default:
		check.Detail = "could not be checked: " + err.Error()
	}
	return check
}

// describeGroups reads one page of one Auto Scaling group: the node sync
// reads its Nodes' groups so.
func describeGroups(ctx context.Context, c *autoscaling.Client) Check {
	_, err := c.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{MaxRecords: sdkaws.Int32(1)})
	check := Check{Name: "autoscaling:DescribeAutoScalingGroups"}
	if err != nil {
		check.Detail = "missing or failed: needed by the node sync to read its Nodes' Auto Scaling groups: " + err.Error()
		return check
	}
	check.OK, check.Detail = true, "read the Nodes' Auto Scaling groups (node sync)"
	return check
}

// checkGetResources reads one page of one resource and returns the check
// and the EC2 ID to name in the dry runs.
func (p *Provider) checkGetResources(ctx context.Context, c *tagging.Client, classifier string) (Check, string) {
	in := &tagging.GetResourcesInput{ResourcesPerPage: sdkaws.Int32(1), ResourceTypeFilters: []string{"ec2"}}
	if name, value, ok := strings.Cut(classifier, "="); ok {
		in.TagFilters = []taggingtypes.TagFilter{{Key: sdkaws.String(name), Values: []string{value}}}
	}
	out, err := c.GetResources(ctx, in)
	check := Check{Name: "tag:GetResources"}
	if err != nil {
		check.Detail = "missing or failed: needed to find classified resources (CloudMetadata): " + err.Error()
		return check, placeholderInstance
	}
	check.OK, check.Detail = true, "find classified resources (CloudMetadata)"
	for _, m := range out.ResourceTagMappingList {
		if id := resourceIDOf(sdkaws.ToString(m.ResourceARN)); id != "" {
			return check, id
		}
	}
	check.Detail += "; no EC2 resource found: the dry runs below name a placeholder ID, so a policy conditioned on resource tags may answer differently"
	return check, placeholderInstance
}

// resourceIDOf returns the resource ID at the end of an EC2 ARN.
func resourceIDOf(arn string) string {
	if i := strings.LastIndex(arn, "/"); i >= 0 && strings.Contains(arn, ":ec2:") {
		return arn[i+1:]
	}
	return ""
}

// dryRun asks EC2 whether the caller may create or delete a tag on id
// without doing it: DryRunOperation means allowed, UnauthorizedOperation not.
func dryRun(ctx context.Context, c *ec2.Client, action, id string, create bool) Check {
	tag := []ec2types.Tag{{Key: sdkaws.String("tagsync-login-check"), Value: sdkaws.String("dry-run")}}
	var err error
	if create {
		_, err = c.CreateTags(ctx, &ec2.CreateTagsInput{DryRun: sdkaws.Bool(true), Resources: []string{id}, Tags: tag})
	} else {
		_, err = c.DeleteTags(ctx, &ec2.DeleteTagsInput{DryRun: sdkaws.Bool(true), Resources: []string{id}, Tags: tag})
	}
	check := Check{Name: action}
	var api smithy.APIError
	switch {
	case errors.As(err, &api) && api.ErrorCode() == "DryRunOperation":
		check.OK, check.Detail = true, "allowed on "+id+" (dry run, nothing written)"
	case errors.As(err, &api) && api.ErrorCode() == "UnauthorizedOperation":
		check.Detail = "missing on " + id + ": needed to write tags (CloudMetadata)"
	case err == nil:
		check.Detail = "the dry run on " + id + " was not refused as a dry run: the endpoint may not support dry runs"
	default:
		check.Detail = "could not be checked on " + id + ": " + err.Error()
	}
	return check
}
