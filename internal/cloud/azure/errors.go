package azure

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// armError is an error with a short, readable message (which operation on
// which resource, and ARM's status, code and message) that still unwraps to
// the SDK's *azcore.ResponseError for errors.As.
type armError struct {
	msg string
	err error
}

// Error returns the readable message.
func (e *armError) Error() string { return e.msg }

// Unwrap returns the SDK error.
func (e *armError) Unwrap() error { return e.err }

// wrapf builds an armError: the formatted context, then ARM's answer.
func wrapf(err error, format string, args ...any) error {
	return &armError{msg: fmt.Sprintf(format, args...) + ": " + describe(err), err: err}
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
