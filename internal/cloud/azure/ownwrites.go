package azure

import (
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/google/uuid"

	"github.com/tagsync/tagsync/internal/cloud"
)

// correlationHeader carries the ID ARM gives an operation: a client may set
// it, ARM returns it on the answer, and Event Grid's resource events carry
// it as data.correlationId.
const correlationHeader = "x-ms-correlation-request-id"

// ownWritesPolicy gives each write a controller makes (its context names
// it: cloud.WithWriter) a correlation ID of its own and records it before
// the write leaves (its event may arrive before its answer), so that the
// write's change event is known as the writer's echo (cloud.OwnWrites). A
// write that fails has no success event to match. Reads and writes made
// outside a controller pass through untouched.
type ownWritesPolicy struct{ writes *cloud.OwnWrites }

// Do implements policy.Policy.
func (p ownWritesPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	writer := cloud.WriterOf(raw.Context())
	if writer == "" || raw.Method == http.MethodGet || raw.Method == http.MethodHead {
		return req.Next()
	}
	sent := raw.Header.Get(correlationHeader)
	if sent == "" {
		sent = uuid.NewString()
		raw.Header.Set(correlationHeader, sent)
	}
	p.writes.Record(sent, writer)
	resp, err := req.Next()
	if err == nil {
		if got := resp.Header.Get(correlationHeader); got != "" && got != sent {
			p.writes.Record(got, writer) // ARM chose another ID
		}
	}
	return resp, err
}
