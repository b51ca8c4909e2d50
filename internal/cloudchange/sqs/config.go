package sqs

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/tagsync/tagsync/internal/cloud/aws"
)

// Defaults and limits of Config.
const (
	// DefaultWaitTime is the long-poll wait of a ReceiveMessage: SQS's
	// maximum, so that an idle queue costs three requests a minute.
	DefaultWaitTime = 20 * time.Second
	// MaxWaitTime is the longest wait SQS accepts.
	MaxWaitTime = 20 * time.Second
	// DefaultMaxInFlight bounds the messages received and not yet done.
	DefaultMaxInFlight = 100
	// DefaultPoisonReceiveCount is how often a message may be received
	// before it is counted and reported as poison.
	DefaultPoisonReceiveCount = 5
	// DefaultVisibilityTimeout is the visibility timeout the source asks
	// for while it does not know the queue's (SQS's own default).
	DefaultVisibilityTimeout = 30 * time.Second
	// DefaultMaxHold is how long the source keeps a message hidden while
	// its passes run, when Config.MaxHold is 0.
	DefaultMaxHold = 15 * time.Minute
	// MaxMaxHold is the longest Config.MaxHold: SQS hides a message for
	// at most 12 hours after it was received.
	MaxMaxHold = 12 * time.Hour
	// maxPerReceive is the most messages one ReceiveMessage returns, and
	// the most entries of a batch call.
	maxPerReceive = 10
)

// Config says which queue the source reads and how. Zero fields take the
// defaults; Validate checks the rest.
type Config struct {
	// QueueURL is the URL of the queue EventBridge delivers to, e.g.
	// https://sqs.us-east-1.amazonaws.com/123456789012/tagsync-events.
	// Required.
	QueueURL string `json:"queueURL"`
	// AWS says where and as whom to call SQS, as for the AWS provider
	// (region, endpoint, profile, static keys; empty fields fall back to
	// the SDK's default chain: environment, IRSA, EKS Pod Identity,
	// instance profile). An empty AWS.Region takes the region in
	// QueueURL's host (sqs.REGION.amazonaws.com), then the SDK's.
	// AWS.Endpoint (a moto_server in tests) replaces SQS's endpoint.
	AWS aws.Config `json:"aws"`
	// WaitTime is how long one ReceiveMessage waits for a message (long
	// polling), in whole seconds from 1 s to 20 s; 0 means
	// DefaultWaitTime.
	WaitTime time.Duration `json:"waitTime,omitempty"`
	// MaxInFlight bounds the messages received and not yet done (their
	// passes running, their deletes pending), so that memory stays
	// bounded however full the queue is; 0 means DefaultMaxInFlight.
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// PoisonReceiveCount: a message received more often than this
	// (ApproximateReceiveCount) is counted and reported as poison; it is
	// still published, and the queue's redrive policy moves it to the
	// dead-letter queue. 0 means DefaultPoisonReceiveCount.
	PoisonReceiveCount int `json:"poisonReceiveCount,omitempty"`
	// MaxHold bounds how long the source keeps a message hidden while the
	// passes it triggered run: until then it extends the message's
	// visibility timeout (ChangeMessageVisibilityBatch) every half
	// timeout, so that a pass longer than the timeout does not get the
	// message received twice. After MaxHold it stops, and the message is
	// received again once its timeout ends; it is deleted when its passes
	// succeed, or left when they fail.
	// At most MaxMaxHold (12 h); 0 means DefaultMaxHold.
	MaxHold time.Duration `json:"maxHold,omitempty"`
	// CheckRules makes the source check every RuleCheckInterval that an
	// enabled EventBridge rule on the default event bus sends to the queue
	// (events:ListRuleNamesByTarget, events:DescribeRule); none takes the
	// source down. A queue nobody sends to is otherwise indistinguishable
	// from a quiet estate.
	CheckRules bool `json:"checkRules,omitempty"`
	// RuleCheckInterval is how often (DefaultRuleCheckInterval when 0).
	RuleCheckInterval time.Duration `json:"ruleCheckInterval,omitempty"`
	// AttributionWait is how long a tag change that removed tags waits
	// for the CloudTrail event of the call that made it, so that it is
	// published naming who removed them (a person's removal crosses over
	// to the labels whatever side the tag came from). It needs the rule
	// to send "AWS API Call via CloudTrail" events of tag writes too
	// (doc.go); 0: no wait, a change takes a writer only from a call that
	// arrived before it. At most MaxAttributionWait.
	AttributionWait time.Duration `json:"attributionWait,omitempty"`
}

// MaxAttributionWait is the longest Config.AttributionWait: a removal
// waits at most this long to reach the labels.
const MaxAttributionWait = 10 * time.Minute

// Validate checks the configuration without calling AWS: a queue URL, a
// wait of whole seconds up to 20 s, no negative bound, a hold of at most
// 12 h, and the AWS part
// (aws.Config.Validate).
func (c Config) Validate() error {
	var errs []error
	if c.QueueURL == "" {
		errs = append(errs, errors.New("no SQS queue URL: give the URL of the queue the EventBridge rule delivers to, such as https://sqs.us-east-1.amazonaws.com/123456789012/tagsync-events"))
	} else if u, err := url.Parse(c.QueueURL); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || strings.Trim(u.Path, "/") == "" {
		errs = append(errs, fmt.Errorf("the SQS queue URL %q is not a queue's URL such as https://sqs.us-east-1.amazonaws.com/123456789012/tagsync-events", c.QueueURL))
	}
	if c.WaitTime < 0 || c.WaitTime > MaxWaitTime || c.WaitTime%time.Second != 0 {
		errs = append(errs, fmt.Errorf("the SQS wait time %s is not a whole number of seconds from 1s to %s", c.WaitTime, MaxWaitTime))
	}
	if c.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("the most SQS messages in flight (%d) is negative", c.MaxInFlight))
	}
	if c.PoisonReceiveCount < 0 {
		errs = append(errs, fmt.Errorf("the poison receive count (%d) is negative", c.PoisonReceiveCount))
	}
	if c.AttributionWait < 0 || c.AttributionWait > MaxAttributionWait {
		errs = append(errs, fmt.Errorf("the wait for a removal's CloudTrail event (%s) is not from 0 to %s", c.AttributionWait, MaxAttributionWait))
	}
	if c.MaxHold < 0 || c.MaxHold > MaxMaxHold {
		errs = append(errs, fmt.Errorf("the longest hold of an SQS message (%s) is not from 0 to %s", c.MaxHold, MaxMaxHold))
	}
	if err := c.AWS.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// withDefaults fills zero fields with the defaults and the region from the
// queue URL.
func (c Config) withDefaults() Config {
	if c.WaitTime == 0 {
		c.WaitTime = DefaultWaitTime
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.PoisonReceiveCount == 0 {
		c.PoisonReceiveCount = DefaultPoisonReceiveCount
	}
	if c.MaxHold == 0 {
		c.MaxHold = DefaultMaxHold
	}
	if c.RuleCheckInterval <= 0 {
		c.RuleCheckInterval = DefaultRuleCheckInterval
	}
	if c.AWS.Region == "" {
		c.AWS.Region = RegionOf(c.QueueURL)
	}
	return c
}

// RegionOf returns the region in a queue URL's host, or "" when it names
// none (a moto_server's http://127.0.0.1:PORT/ACCOUNT/NAME): the label
// after "sqs" (sqs.us-east-1.amazonaws.com, sqs-fips.us-gov-west-1...,
// vpce-....sqs.eu-west-1.vpce.amazonaws.com) or before "queue" (the legacy
// us-east-1.queue.amazonaws.com).
func RegionOf(queueURL string) string {
	u, err := url.Parse(queueURL)
	if err != nil {
		return ""
	}
	labels := strings.Split(u.Hostname(), ".")
	for i, l := range labels {
		switch {
		case (l == "sqs" || l == "sqs-fips") && i+1 < len(labels) && labels[i+1] != "amazonaws":
			return labels[i+1]
		case l == "queue" && i > 0:
			return labels[i-1]
		}
	}
	return ""
}
