package armsim

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Error is an ARM error: an HTTP status plus the code and message that ARM
// puts in its {"error":{"code":..,"message":..}} body. The Go seeding API
// returns it too, so callers can inspect Code.
type Error struct {
	// Status is the HTTP status code ARM answers with.
	Status int
	// Code is ARM's machine-readable error code, e.g. "ResourceNotFound".
	Code string
	// Message is the human-readable explanation.
	Message string
	// Details are the error's details, as resource providers send them
	// (Compute names the throttling policy that refused a request there).
	Details []ErrorDetail
}

// ErrorDetail is one entry of an ARM error's details.
type ErrorDetail struct {
	Code    string `json:"code"`
	Target  string `json:"target,omitempty"`
	Message string `json:"message"`
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

func newError(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func errBadRequest(code, format string, args ...any) *Error {
	return newError(http.StatusBadRequest, code, format, args...)
}

func errResourceNotFound(typ, name, rg string) *Error {
	return newError(http.StatusNotFound, "ResourceNotFound",
		"The Resource '%s/%s' under resource group '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix",
		typ, name, rg)
}

func errGroupNotFound(rg string) *Error {
	return newError(http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", rg)
}

func errSubscriptionNotFound(sub string) *Error {
	return newError(http.StatusNotFound, "SubscriptionNotFound", "The subscription '%s' could not be found.", sub)
}

func errInvalidJSON(err error) *Error {
	return errBadRequest("InvalidRequestContent",
		"The request content was invalid and could not be deserialized: '%v'.", err)
}

// errorBody is the wire shape of an ARM error.
type errorBody struct {
	Error struct {
		Code    string        `json:"code"`
		Message string        `json:"message"`
		Details []ErrorDetail `json:"details,omitempty"`
	} `json:"error"`
}

// writeError writes e in ARM's error shape.
func writeError(w http.ResponseWriter, e *Error) {
	var b errorBody
	b.Error.Code, b.Error.Message, b.Error.Details = e.Code, e.Message, e.Details
	writeJSON(w, e.Status, b)
}

// writeJSON writes v as a JSON body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":{"code":"InternalServerError","message":"encoding response"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
