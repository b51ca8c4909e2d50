package azure

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tagsync/tagsync/internal/cloud"
)

// codeTooManyTags is ARM's error code for a write that would leave more
// tags on a resource than its type allows.
const codeTooManyTags = "TooManyTags"

// armError is an error with a short, readable message (which operation on
// which resource, and ARM's status, code and message) that still unwraps to
// the SDK's *azcore.ResponseError for errors.As, and reports its cloud kind
// for errors.Is: cloud.ErrForbidden (403), cloud.ErrNotFound (404),
// cloud.ErrTooManyTags (ARM's tag-limit refusal) or, through the
// *cloud.ThrottledError it then unwraps to, cloud.ErrThrottled (429, a 503
// with Retry-After, or a call a closed throttle gate did not send).
type armError struct {
	msg    string   // the context, then answer
	answer string   // ARM's answer in words
	err    error    // the SDK's error, or a *cloud.ThrottledError around it
	kind   error    // the cloud kind errors.Is reports besides err's, or nil
	gate   *gateKey // the gate a throttled answer closed or would have, or nil
}

// Error returns the readable message.
func (e *armError) Error() string { return e.msg }

// Unwrap returns the SDK error (through a *cloud.ThrottledError when
// throttled).
func (e *armError) Unwrap() error { return e.err }

// Is reports the error's cloud kind.
func (e *armError) Is(target error) bool { return e.kind != nil && target == e.kind }

// wrapf builds an armError: the formatted context, then ARM's answer.
func (p *Provider) wrapf(err error, format string, args ...any) error {
	return p.armErr(fmt.Sprintf(format, args...), err)
}

// armErr builds an armError from its context and the SDK's error, typing
// it: a throttled answer becomes a *cloud.ThrottledError with the wait
// still left at its gate.
func (p *Provider) armErr(context string, err error) *armError {
	e := &armError{answer: describe(err), err: err, kind: kindOf(err)}
	if t, key := p.throttled(err); t != nil {
		e.err, e.gate = t, key
		e.answer += fmt.Sprintf(" (retry after %s)", cloud.RoundWait(t.RetryAfter))
	}
	e.msg = context + ": " + e.answer
	return e
}

// kindOf returns the cloud kind of an ARM answer other than throttling,
// or nil.
func kindOf(err error) error {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return nil
	}
	switch {
	case re.StatusCode == http.StatusForbidden:
		return cloud.ErrForbidden
	case re.StatusCode == http.StatusNotFound:
		return cloud.ErrNotFound
	case strings.EqualFold(re.ErrorCode, codeTooManyTags):
		return cloud.ErrTooManyTags
	}
	return nil
}

// throttled returns the *cloud.ThrottledError of an ARM answer that asks
// to slow down: 429, or 503 with a Retry-After. Its RetryAfter is what is
// left of the wait at the request's gate (the answer closed it), or the
// answer's Retry-After when the request is unknown. nil for other errors
// and for errors that are typed already (a held call).
func (p *Provider) throttled(err error) (*cloud.ThrottledError, *gateKey) {
	var re *azcore.ResponseError
	if errors.Is(err, cloud.ErrThrottled) || !errors.As(err, &re) || re.RawResponse == nil {
		return nil, nil
	}
	resp := re.RawResponse
	wait := retryAfter(resp.Header)
	if resp.StatusCode != http.StatusTooManyRequests && (resp.StatusCode != http.StatusServiceUnavailable || wait <= 0) {
		return nil, nil
	}
	t := &cloud.ThrottledError{Scope: "ARM", RetryAfter: wait, Err: err}
	req := resp.Request
	switch {
	case req == nil || req.URL == nil:
	case strings.EqualFold(re.ErrorCode, codeAnotherOperation):
		// No gate closed: this resource alone waits for the other operation.
		provider, res := targetOf(req.URL.Path)
		t.Scope = "another operation on " + res
		return t, &gateKey{provider: provider, resource: res}
	default:
		key, left := p.opts.Gates.longest(gateKeysOf(req.URL, req.Method))
		t.Scope, t.RetryAfter = key.scope(), left
		return t, &key
	}
	return t, nil
}

// describe summarises an error in one line: "ARM answered 400
// InvalidTagName: <message>" for ARM errors, the error text otherwise.
func describe(err error) string {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return err.Error()
	}
	msg := ""
	if re.RawResponse != nil {
		if body, perr := runtime.Payload(re.RawResponse); perr == nil {
			var b struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(body, &b) == nil {
				msg = b.Error.Message
			}
		}
	}
	s := fmt.Sprintf("ARM answered %d %s", re.StatusCode, re.ErrorCode)
	if msg != "" {
		s += ": " + msg
	}
	return s
}
