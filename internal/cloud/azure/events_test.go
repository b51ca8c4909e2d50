package azure

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tagsync/tagsync/internal/cloud"
)

// answerWith is a transport that answers every request with a correlation
// ID (the request's, or replaced) after calling seen with the request.
type answerWith struct {
	replace string
	seen    func(*http.Request)
}

func (a answerWith) Do(req *http.Request) (*http.Response, error) {
	a.seen(req)
	h := http.Header{}
	h.Set(correlationHeader, req.Header.Get(correlationHeader))
	if a.replace != "" {
		h.Set(correlationHeader, a.replace)
	}
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

func TestUnitAControllersWriteIsRecordedBeforeItLeaves(t *testing.T) {
	own := cloud.NewOwnWrites(10)
	send := func(ctx context.Context, method, replace string) (sent string) {
		t.Helper()
		pl := runtime.NewPipeline("test", "v", runtime.PipelineOptions{PerCall: []policy.Policy{ownWritesPolicy{own}}},
			&policy.ClientOptions{Transport: answerWith{replace: replace, seen: func(r *http.Request) {
				sent = r.Header.Get(correlationHeader)
				if isWrite(method) && own.Writer(sent) != cloud.WriterOf(ctx) {
					t.Errorf("%s: the write left before its correlation ID %q was recorded for %+v", method, sent, cloud.WriterOf(ctx))
				}
			}}, Retry: policy.RetryOptions{MaxRetries: -1}})
		req, err := runtime.NewRequest(ctx, method, "https://management.example/subscriptions/s/providers/Microsoft.Resources/tags/default")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := pl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return sent
	}
	writer := cloud.Writer{Controller: "metadata", Object: "ns/cm"}
	ctx := cloud.WithWriter(context.Background(), writer)
	if id := send(ctx, http.MethodPatch, ""); id == "" || own.Writer(id) != writer {
		t.Errorf("a PATCH of the metadata controller: correlation ID %q recorded for %+v", id, own.Writer(id))
	}
	send(ctx, http.MethodPut, "arm-chose-this")
	if got := own.Writer("arm-chose-this"); got != writer {
		t.Errorf("the ID ARM answered with instead of ours is recorded for %+v, want %+v", got, writer)
	}
	if id := send(ctx, http.MethodGet, ""); id != "" {
		t.Errorf("a read was given correlation ID %q; reads are left alone", id)
	}
	if id := send(ctx, http.MethodPost, ""); id != "" {
		t.Errorf("a POST (a Resource Graph query) was given correlation ID %q; it writes no tags", id)
	}
	if id := send(context.Background(), http.MethodPatch, ""); id != "" {
		t.Errorf("a write outside a controller was given correlation ID %q", id)
	}
}
