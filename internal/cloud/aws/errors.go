package aws

import (
	"errors"
	"fmt"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/tagsync/tagsync/internal/cloud"
)

// Error codes AWS answers that tagsync types.
const (
	codeTagLimitExceeded      = "TagLimitExceeded"
	codeUnauthorizedOperation = "UnauthorizedOperation"
)

// throttleCodes are the error codes with which AWS asks to slow down
// (besides every code starting with "Throttl").
var throttleCodes = map[string]bool{
	"RequestLimitExceeded":                   true,
	"Throttling":                             true,
	"ThrottlingException":                    true,
	"ThrottledException":                     true,
	"RequestThrottled":                       true,
	"RequestThrottledException":              true,
	"TooManyRequestsException":               true,
	"SlowDown":                               true,
	"EC2ThrottledException":                  true,
	"BandwidthLimitExceeded":                 true,
	"PriorRequestNotComplete":                true,
	"ProvisionedThroughputExceededException": true,
}

// forbiddenCodes are the error codes with which AWS refuses the caller.
var forbiddenCodes = map[string]bool{
	codeUnauthorizedOperation:     true,
	"AccessDenied":                true,
	"AccessDeniedException":       true,
	"AuthFailure":                 true,
	"OptInRequired":               true,
	"UnrecognizedClientException": true,
	"InvalidClientTokenId":        true,
}

// errorCode returns the AWS error code of an answer, or "".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// isThrottle reports whether err is AWS asking to slow down.
func isThrottle(err error) bool {
	code := errorCode(err)
	return throttleCodes[code] || strings.HasPrefix(code, "Throttl")
}

// answered reports whether err is nil or an answer from AWS (not a
// transport failure or a held attempt).
func answered(err error) bool {
	if err == nil {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae)
}

// kindOf returns the cloud kind of an AWS answer other than throttling, or
// nil: ErrForbidden for refusals of the caller, ErrNotFound for missing or
// malformed resource IDs (Invalid*.NotFound, Invalid*.Malformed, InvalidID:
// such a resource cannot exist), ErrTooManyTags for TagLimitExceeded.
func kindOf(err error) error {
	code := errorCode(err)
	switch {
	case code == "":
		return nil
	case forbiddenCodes[code]:
		return cloud.ErrForbidden
	case notFoundCode(code):
		return cloud.ErrNotFound
	case code == codeTagLimitExceeded || code == "TooManyTagsException" || code == "TooManyTags":
		return cloud.ErrTooManyTags
	}
	return nil
}

// notFoundCode reports whether code says a resource ID names nothing:
// EC2's Invalid*.NotFound and Invalid*.Malformed, and the codes other
// services answer for a missing resource (Elastic Load Balancing's
// LoadBalancerNotFound and TargetGroupNotFound, ResourceNotFoundException).
func notFoundCode(code string) bool {
	return strings.HasSuffix(code, "NotFound") || strings.HasSuffix(code, ".Malformed") || code == "InvalidID" ||
		code == "ResourceNotFoundException"
}

// awsError is an error with a short, readable message (which operation on
// what, and AWS's status, code and message) that still unwraps to the
// SDK's error for errors.As (smithy.APIError, *smithy.OperationError), and
// reports its cloud kind for errors.Is: cloud.ErrForbidden,
// cloud.ErrNotFound, cloud.ErrTooManyTags or, through the
// *cloud.ThrottledError it then unwraps to, cloud.ErrThrottled.
type awsError struct {
	msg  string // the context, then the answer
	err  error  // the SDK's error, or a *cloud.ThrottledError around it
	kind error  // the cloud kind errors.Is reports besides err's, or nil
}

// Error returns the readable message.
func (e *awsError) Error() string { return e.msg }

// Unwrap returns the SDK error (through a *cloud.ThrottledError when
// throttled).
func (e *awsError) Unwrap() error { return e.err }

// Is reports the error's cloud kind.
func (e *awsError) Is(target error) bool { return e.kind != nil && target == e.kind }

// wrap builds an awsError for a call in region: its context, then AWS's
// answer. A throttled answer becomes a *cloud.ThrottledError whose
// RetryAfter is what is left of the wait at the call's gate. Any other
// failure in a region AWS does not have (see knownRegions) is
// cloud.ErrNotFound, saying the region name is wrong.
func (p *Provider) wrap(region, context string, err error) *awsError {
	e := &awsError{err: err, kind: kindOf(err)}
	answer := describe(err)
	var held *heldError
	if !errors.As(err, &held) && isThrottle(err) {
		key := gateKey{endpoint: p.cfg.Endpoint, region: region}
		var oe *smithy.OperationError
		if errors.As(err, &oe) {
			key.service, key.bucket = oe.ServiceID, bucketOf(oe.OperationName)
		}
		wait := p.opts.Gates.remaining(key)
		if wait <= 0 {
			wait = p.opts.Gates.base
		}
		e.err = &cloud.ThrottledError{Scope: key.scope(), RetryAfter: wait, Err: err}
		answer += fmt.Sprintf(" (calls held for %s)", cloud.RoundWait(wait))
	}
	if note := unknownRegionNote(region); note != "" && e.kind == nil && !isThrottle(err) && !errors.As(err, &held) {
		// The call failed in a region AWS does not have: only a person
		// correcting the name cures it.
		e.kind, answer = cloud.ErrNotFound, answer+note
	}
	e.msg = context + ": " + answer
	return e
}

// describe summarises an error in one line: "EC2 answered 400
// InvalidInstanceID.NotFound: <message> (request <id>)" for AWS's answers,
// the held attempt's words for a held one, the error text otherwise (with a
// hint when no credentials could be found).
func describe(err error) string {
	var held *heldError
	if errors.As(err, &held) {
		return held.Error()
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		s := err.Error()
		if strings.Contains(s, "get identity") || strings.Contains(s, "retrieve credentials") {
			s += fmt.Sprintf(" (no usable AWS credentials: give %s and %s, or set up the default chain: %s/%s, IRSA (%s and %s), EKS Pod Identity (%s), a profile (%s) or an instance profile)",
				FlagAccessKeyID, FlagSecretAccessKeyFile, EnvAccessKeyID, EnvSecretAccessKey, EnvRoleARN, EnvWebIdentityTokenFile, EnvContainerCredsFullURI, EnvProfile)
		}
		return s
	}
	service := "AWS"
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		service = oe.ServiceID
	}
	s := service + " answered"
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		s += fmt.Sprintf(" %d", re.Response.StatusCode)
	}
	s += " " + ae.ErrorCode()
	if msg := ae.ErrorMessage(); msg != "" {
		s += ": " + msg
	}
	if re != nil && re.RequestID != "" {
		s += " (request " + re.RequestID + ")"
	}
	return s
}
