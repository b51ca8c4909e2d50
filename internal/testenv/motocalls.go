package testenv

import (
	"bytes"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// AWSCall is one kind of request the rules answered: who sent it, which
// operation it was, and the error it got.
type AWSCall struct {
	// AccessKey is the caller's access key ID (from its SigV4 signature):
	// benchmarks give the code they measure a key of its own, so that the
	// harness's own calls are not counted with it.
	AccessKey string
	// Op is the service and action, such as ec2:DescribeInstances,
	// autoscaling:CreateOrUpdateTags or tagging:GetResources.
	Op string
	// Error is the error code of the answer (RequestLimitExceeded when the
	// rules throttled it, FilterLimitExceeded, InvalidInstanceID.NotFound,
	// or moto's own), "" when it succeeded.
	Error string
}

// awsCallLog counts the requests the rules answered.
type awsCallLog struct {
	mu    sync.Mutex
	calls map[AWSCall]int
}

// Calls returns how many requests of each kind the rules have answered
// since moto started: what AWS would have billed against its limits and
// throttled, whatever the caller's SDK retried. Unsigned requests (moto's
// own API) are not counted.
func (a *AWSRules) Calls() map[AWSCall]int {
	a.log.mu.Lock()
	defer a.log.mu.Unlock()
	return maps.Clone(a.log.calls)
}

// Count returns how many requests of op (service:Action) the rules have
// answered with the error code code ("" for successes), whoever sent them.
func (a *AWSRules) Count(op, code string) int {
	n := 0
	for c, k := range a.Calls() {
		if c.Op == op && c.Error == code {
			n += k
		}
	}
	return n
}

// record counts one answered request.
func (l *awsCallLog) record(c AWSCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls == nil {
		l.calls = map[AWSCall]int{}
	}
	l.calls[c]++
}

// awsOp names a request's operation as service:Action: the query
// protocol's Action, or the JSON protocol's X-Amz-Target operation.
func awsOp(service string, r *http.Request, form url.Values) string {
	action := form.Get("Action")
	if action == "" {
		target := r.Header.Get("X-Amz-Target")
		action = target[strings.LastIndex(target, ".")+1:]
	}
	return service + ":" + action
}

// errorCode finds the error code in an AWS error document (the query
// protocols' <Code>, the JSON protocol's __type).
var errorCode = regexp.MustCompile(`<Code>([^<]+)</Code>|"__type"\s*:\s*"(?:[^"#]*#)?([^"]+)"`)

// callRecorder is the ResponseWriter of a counted request: it keeps the
// status and the start of an error's body, to name its code.
type callRecorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *callRecorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *callRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status >= 400 && w.body.Len() < 2048 {
		w.body.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes a flush on (the reverse proxy flushes).
func (w *callRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// code is the answer's error code: "" for a success, the document's code,
// or the HTTP status's text when the body names none.
func (w *callRecorder) code() string {
	if w.status < 400 {
		return ""
	}
	if m := errorCode.FindSubmatch(w.body.Bytes()); m != nil {
		return string(m[1]) + string(m[2])
	}
	return http.StatusText(w.status)
}
