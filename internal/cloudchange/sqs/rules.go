package sqs

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// DefaultRuleCheckInterval is how often the source checks that an enabled
// EventBridge rule still sends to its queue (Config.CheckRules).
const DefaultRuleCheckInterval = 2 * time.Minute

// ruleState is what the last rule check found: "" while an enabled rule
// targets the queue (or the check could not tell), else why not.
type ruleState struct{ missing string }

// ruleLoop checks every RuleCheckInterval that an enabled rule on the
// default event bus targets the queue (Start runs it with CheckRules). A
// queue nobody sends to receives nothing, which a quiet estate cannot tell
// from no change at all: a deleted or disabled rule takes the source down.
func (s *Source) ruleLoop(ctx context.Context) {
	tick := time.NewTicker(s.cfg.RuleCheckInterval)
	defer tick.Stop()
	for {
		s.checkRules(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// checkRules runs one check and records it; a check that fails (access
// denied, throttled) keeps what the last one found and logs why.
func (s *Source) checkRules(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	missing, err := s.rulesMissing(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.logQueue("cannot check the EventBridge rules that send to the SQS queue", "error", classify(err, s.cfg.QueueURL).reason)
		}
		return
	}
	s.rulesMu.Lock()
	was := s.rules.missing
	s.rules.missing = missing
	s.rulesMu.Unlock()
	switch {
	case missing != "" && was == "":
		s.log.Info("WARNING: "+missing+"; the source counts as down", "queue", s.cfg.QueueURL)
	case missing == "" && was != "":
		s.log.Info("an enabled EventBridge rule sends to the SQS queue again", "queue", s.cfg.QueueURL)
	}
}

// rulesMissing says why no enabled rule sends to the queue, "" when one
// does.
func (s *Source) rulesMissing(ctx context.Context) (string, error) {
	arn, err := s.queueARN(ctx)
	if err != nil {
		return "", err
	}
	var names []string
	in := &eventbridge.ListRuleNamesByTargetInput{TargetArn: &arn}
	for {
		page, err := s.rulesClient.ListRuleNamesByTarget(ctx, in)
		if err != nil {
			return "", err
		}
		names = append(names, page.RuleNames...)
		if page.NextToken == nil || *page.NextToken == "" {
			break
		}
		in.NextToken = page.NextToken
	}
	for _, name := range names {
		rule, err := s.rulesClient.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: &name})
		if err != nil {
			return "", err
		}
		if rule.State == ebtypes.RuleStateEnabled || rule.State == ebtypes.RuleStateEnabledWithAllCloudtrailManagementEvents {
			return "", nil
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("no EventBridge rule on the default event bus sends to the queue %s", arn), nil
	}
	return fmt.Sprintf("every EventBridge rule that sends to the queue %s is disabled (%v)", arn, names), nil
}

// queueARN is the queue's ARN, read once.
func (s *Source) queueARN(ctx context.Context) (string, error) {
	s.rulesMu.Lock()
	arn := s.arn
	s.rulesMu.Unlock()
	if arn != "" {
		return arn, nil
	}
	out, err := s.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &s.cfg.QueueURL,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", err
	}
	arn = out.Attributes[string(types.QueueAttributeNameQueueArn)]
	s.rulesMu.Lock()
	s.arn = arn
	s.rulesMu.Unlock()
	return arn, nil
}

// rulesDown is why the rule check takes the source down, "" when it does
// not.
func (s *Source) rulesDown() string {
	s.rulesMu.Lock()
	defer s.rulesMu.Unlock()
	return s.rules.missing
}
