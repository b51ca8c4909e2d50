package sqs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

// The reasons of a failed call: MetricReceiveError's label values.
const (
	reasonQueueGone    = "queue_gone"
	reasonAccessDenied = "access_denied"
	reasonCredentials  = "credentials"
	reasonUnreachable  = "unreachable"
	reasonThrottled    = "throttled"
	reasonOther        = "other"
)

// The error codes SQS answers that the source tells apart.
var (
	queueGoneCodes = map[string]bool{
		"AWS.SimpleQueueService.NonExistentQueue": true,
		"QueueDoesNotExist":                       true,
	}
	accessDeniedCodes = map[string]bool{
		"AccessDenied":          true,
		"AccessDeniedException": true,
		"AuthorizationError":    true,
		"KmsAccessDenied":       true,
	}
	credentialCodes = map[string]bool{
		"ExpiredToken":                true,
		"ExpiredTokenException":       true,
		"RequestExpired":              true,
		"InvalidClientTokenId":        true,
		"UnrecognizedClientException": true,
		"InvalidAccessKeyId":          true,
		"SignatureDoesNotMatch":       true,
		"IncompleteSignature":         true,
		"MissingAuthenticationToken":  true,
		"InvalidSecurity":             true,
	}
	throttleCodes = map[string]bool{
		"RequestThrottled":    true,
		"ThrottlingException": true,
		"Throttling":          true,
		"OverLimit":           true,
	}
)

// failure is why a call to SQS failed: a metric label and a Health reason
// in words that stay the same while the cause does (no request IDs), so
// that the source logs once per change of reason.
type failure struct {
	label  string
	reason string
}

// classify says why a call about queueURL failed.
func classify(err error, queueURL string) failure {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return classifyTransport(err)
	}
	code := ae.ErrorCode()
	var gone *types.QueueDoesNotExist
	switch {
	case errors.As(err, &gone) || queueGoneCodes[code]:
		return failure{reasonQueueGone, fmt.Sprintf("the SQS queue %s does not exist (%s): it was deleted, or the URL names another account or region", queueURL, code)}
	case accessDeniedCodes[code]:
		return failure{reasonAccessDenied, fmt.Sprintf("SQS denies access to the queue %s (%s): the credentials need sqs:ReceiveMessage, sqs:DeleteMessage, sqs:ChangeMessageVisibility and sqs:GetQueueAttributes on it", queueURL, code)}
	case credentialCodes[code]:
		return failure{reasonCredentials, fmt.Sprintf("SQS does not accept the AWS credentials (%s): they expired or are not valid", code)}
	case throttleCodes[code] || strings.HasPrefix(code, "Throttl"):
		return failure{reasonThrottled, fmt.Sprintf("SQS throttles the receives (%s)", code)}
	}
	return failure{reasonOther, fmt.Sprintf("SQS answered %s: %s", code, ae.ErrorMessage())}
}

// classifyTransport says why a call that got no answer from SQS failed:
// no credentials to sign with, or no connection.
func classifyTransport(err error) failure {
	s := err.Error()
	if strings.Contains(s, "retrieve credentials") || strings.Contains(s, "get identity") {
		return failure{reasonCredentials, "no usable AWS credentials: " + s}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return failure{reasonUnreachable, "SQS did not answer in time"}
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return failure{reasonUnreachable, "cannot reach SQS: " + op.Error()}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return failure{reasonUnreachable, "cannot reach SQS: " + dns.Error()}
	}
	return failure{reasonOther, s}
}

// healthState is the source's Health, safe for concurrent use.
type healthState struct {
	mu sync.Mutex
	h  cloudchange.Health
}

// get returns the Health.
func (s *healthState) get() cloudchange.Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h
}

// set records whether the source is up and why (a warning while up), and
// reports whether Up or Reason changed.
func (s *healthState) set(up bool, reason string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.h.Up != up || s.h.Reason != reason
	if s.h.Up != up || s.h.Since.IsZero() {
		s.h.Since = now
	}
	s.h.Up, s.h.Reason = up, reason
	return changed
}

// delivered records a published change.
func (s *healthState) delivered(now time.Time) {
	s.mu.Lock()
	s.h.LastDelivery = now
	s.mu.Unlock()
}
