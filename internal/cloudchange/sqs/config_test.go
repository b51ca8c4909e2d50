package sqs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/tagsync/tagsync/internal/cloud/aws"
)

// TestRegionOf: the region is the label after "sqs" or before "queue" in
// the queue URL's host; a host without one (moto) names none.
func TestRegionOf(t *testing.T) {
	cases := []struct{ url, region string }{
		{"https://sqs.us-east-1.amazonaws.com/123456789012/tagsync", "us-east-1"},
		{"https://sqs.cn-north-1.amazonaws.com.cn/123456789012/tagsync", "cn-north-1"},
		{"https://sqs-fips.us-gov-west-1.amazonaws.com/123456789012/tagsync", "us-gov-west-1"},
		{"https://eu-west-1.queue.amazonaws.com/123456789012/tagsync", "eu-west-1"},
		{"https://vpce-0a1b2c3d-4e5f.sqs.eu-west-1.vpce.amazonaws.com/123456789012/tagsync", "eu-west-1"},
		{"https://sqs.amazonaws.com/123456789012/tagsync", ""},
		{"http://127.0.0.1:5000/123456789012/tagsync", ""},
		{"::not a URL", ""},
	}
	for _, tc := range cases {
		got := RegionOf(tc.url)
		if got != tc.region {
			t.Errorf("RegionOf(%q) = %q, want %q", tc.url, got, tc.region)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	const queue = "https://sqs.us-east-1.amazonaws.com/123456789012/tagsync"
	cases := []struct {
		name string
		cfg  Config
		want string // a substring of the error; "" for valid
	}{
		{name: "a queue URL is enough", cfg: Config{QueueURL: queue}},
		{name: "every field", cfg: Config{QueueURL: queue, WaitTime: 5 * time.Second, MaxInFlight: 10, PoisonReceiveCount: 3,
			AWS: aws.Config{Region: "eu-west-1", AccessKeyID: "AKIA", SecretAccessKey: "secret"}}},
		{name: "no queue URL", cfg: Config{}, want: "no SQS queue URL"},
		{name: "a queue URL without a queue", cfg: Config{QueueURL: "https://sqs.us-east-1.amazonaws.com/"}, want: "not a queue's URL"},
		{name: "a relative queue URL", cfg: Config{QueueURL: "123456789012/tagsync"}, want: "not a queue's URL"},
		{name: "a wait over 20 s", cfg: Config{QueueURL: queue, WaitTime: 21 * time.Second}, want: "from 1s to 20s"},
		{name: "a wait of part of a second", cfg: Config{QueueURL: queue, WaitTime: 1500 * time.Millisecond}, want: "whole number"},
		{name: "negative in flight", cfg: Config{QueueURL: queue, MaxInFlight: -1}, want: "negative"},
		{name: "a hold of 12 h", cfg: Config{QueueURL: queue, MaxHold: MaxMaxHold}},
		{name: "a hold over 12 h", cfg: Config{QueueURL: queue, MaxHold: MaxMaxHold + time.Second}, want: "longest hold"},
		{name: "a negative hold", cfg: Config{QueueURL: queue, MaxHold: -time.Second}, want: "longest hold"},
		{name: "an attribution wait of 10 min", cfg: Config{QueueURL: queue, AttributionWait: MaxAttributionWait}},
		{name: "an attribution wait over 10 min", cfg: Config{QueueURL: queue, AttributionWait: MaxAttributionWait + time.Second}, want: "CloudTrail event"},
		{name: "half the static keys", cfg: Config{QueueURL: queue, AWS: aws.Config{AccessKeyID: "AKIA"}},
			want: aws.FlagSecretAccessKeyFile},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	got := Config{QueueURL: "https://sqs.ap-south-1.amazonaws.com/123456789012/tagsync"}.withDefaults()
	if got.WaitTime != DefaultWaitTime || got.MaxInFlight != DefaultMaxInFlight || got.PoisonReceiveCount != DefaultPoisonReceiveCount || got.MaxHold != DefaultMaxHold ||
		got.AWS.Region != "ap-south-1" {
		t.Errorf("withDefaults() = %+v", got)
	}
	if got := (Config{QueueURL: "https://sqs.ap-south-1.amazonaws.com/1/q", AWS: aws.Config{Region: "eu-west-1"}}).withDefaults(); got.AWS.Region != "eu-west-1" {
		t.Errorf("withDefaults() replaced the configured region: %q", got.AWS.Region)
	}
}

func TestClassify(t *testing.T) {
	const queue = "https://sqs.us-east-1.amazonaws.com/123456789012/tagsync"
	api := func(code string) error {
		return &smithy.OperationError{ServiceID: "SQS", OperationName: "ReceiveMessage",
			Err: &smithy.GenericAPIError{Code: code, Message: "the message"}}
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		err          error
		label, words string
	}{
		{api("AWS.SimpleQueueService.NonExistentQueue"), reasonQueueGone, "does not exist"},
		{&smithy.OperationError{Err: &types.QueueDoesNotExist{}}, reasonQueueGone, "does not exist"},
		{api("AccessDenied"), reasonAccessDenied, "sqs:ReceiveMessage"},
		{api("ExpiredToken"), reasonCredentials, "expired"},
		{api("InvalidClientTokenId"), reasonCredentials, "not valid"},
		{fmt.Errorf("operation error SQS: ReceiveMessage, get identity: get credentials: failed to refresh cached credentials"),
			reasonCredentials, "no usable AWS credentials"},
		{fmt.Errorf("send: %w", refused), reasonUnreachable, "connection refused"},
		{fmt.Errorf("operation error SQS: ReceiveMessage: %w", context.DeadlineExceeded), reasonUnreachable, "did not answer"},
		{api("ThrottlingException"), reasonThrottled, "throttles"},
		{api("InternalError"), reasonOther, "InternalError: the message"},
		{errors.New("something else"), reasonOther, "something else"},
	}
	for _, tc := range cases {
		f := classify(tc.err, queue)
		if f.label != tc.label || !strings.Contains(f.reason, tc.words) {
			t.Errorf("classify(%v) = %+v, want label %s and words %q", tc.err, f, tc.label, tc.words)
		}
	}
}

// TestBackoff: 1 s doubling to 1 min, then 1 min while failures go on.
func TestBackoff(t *testing.T) {
	s := &Source{first: DefaultFirstBackoff, max: DefaultMaxBackoff}
	b := s.newBackoff()
	var got []time.Duration
	for range 9 {
		got = append(got, b.Step())
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, time.Minute, time.Minute, time.Minute}
	if !slices.Equal(got, want) {
		t.Errorf("backoff steps %v, want %v", got, want)
	}
}
