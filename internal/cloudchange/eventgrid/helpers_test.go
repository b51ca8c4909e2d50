package eventgrid

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/testenv"
)

// testKey is the shared secret of the tests' secret files.
const testKey = "s3cret-of-twenty-chars"

// scaleSet is a resource ID events name.
const scaleSet = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg1/providers/Microsoft.Compute/virtualMachineScaleSets/pool1"

// recordingSink records every Publish and reports each done at once; with
// full set it refuses every delivery as a full queue does.
type recordingSink struct {
	mu    sync.Mutex
	calls [][]cloudchange.Change
	full  bool
}

func (s *recordingSink) Publish(changes []cloudchange.Change, done func(error)) error {
	s.mu.Lock()
	if s.full {
		s.mu.Unlock()
		return cloudchange.ErrQueueFull
	}
	s.calls = append(s.calls, changes)
	s.mu.Unlock()
	done(nil)
	return nil
}

// published returns the Publish calls so far.
func (s *recordingSink) published() [][]cloudchange.Change {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]cloudchange.Change(nil), s.calls...)
}

// endpoint is a webhook served by httptest, with its sink.
type endpoint struct {
	w    *Webhook
	sink *recordingSink
	url  string // the endpoint's URL, without credentials
}

// serve builds a webhook from cfg (BindAddress filled in) and serves its
// handler on an httptest server.
func serve(t *testing.T, cfg Config) *endpoint {
	t.Helper()
	return serveWith(t, cfg, func(*Webhook) {})
}

// serveWith is serve with a change to the webhook before it serves.
func serveWith(t *testing.T, cfg Config, change func(*Webhook)) *endpoint {
	t.Helper()
	cfg.BindAddress = or(cfg.BindAddress, "127.0.0.1:0")
	sink := &recordingSink{}
	w, err := New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	change(w)
	srv := httptest.NewServer(w.Handler())
	t.Cleanup(srv.Close)
	return &endpoint{w: w, sink: sink, url: srv.URL + DefaultPath}
}

// serveWithKey serves a webhook authenticating with testKey.
func serveWithKey(t *testing.T) *endpoint {
	t.Helper()
	return serve(t, Config{SecretFile: writeSecret(t, testKey)})
}

// keyURL is the endpoint's URL with a key.
func (e *endpoint) keyURL(key string) string { return e.url + "?" + KeyParameter + "=" + key }

// post sends body to url with the headers and returns the response's
// status and body.
func post(t *testing.T, url string, body []byte, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	return do(t, req)
}

// do sends a request and returns the response's status and body.
func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// armEvent is an ARM event in the Event Grid schema.
func armEvent(id, eventType, resource, operation string, at time.Time) map[string]any {
	return map[string]any{
		"id": id, "topic": "/subscriptions/00000000-0000-0000-0000-000000000001", "subject": resource,
		"eventType": eventType, "eventTime": at.Format(time.RFC3339Nano), "dataVersion": "2", "metadataVersion": "1",
		"data": map[string]any{"resourceUri": resource, "operationName": operation, "status": "Succeeded"},
	}
}

// writeEvent is a ResourceWriteSuccess of the scale set, now.
func writeEvent(id string) map[string]any {
	return armEvent(id, typeWrite, scaleSet, "Microsoft.Compute/virtualMachineScaleSets/write", time.Now())
}

// gridBody is an Event Grid schema delivery.
func gridBody(t *testing.T, evs ...map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cloudEvent is an ARM event as Event Grid sends it in the CloudEvents
// schema.
func cloudEvent(t *testing.T, id string) event.Event {
	t.Helper()
	ce := event.New()
	ce.SetID(id)
	ce.SetType(typeWrite)
	ce.SetSource("/subscriptions/00000000-0000-0000-0000-000000000001")
	ce.SetSubject(scaleSet)
	ce.SetTime(time.Now())
	if err := ce.SetData(event.ApplicationJSON, map[string]any{"resourceUri": scaleSet,
		"operationName": "Microsoft.Compute/virtualMachineScaleSets/write"}); err != nil {
		t.Fatal(err)
	}
	return ce
}

// cloudEventRequest builds a CloudEvents request for url: one event in
// structured or binary mode, or several as a batch.
func cloudEventRequest(t *testing.T, url, mode string, ces ...event.Event) *http.Request {
	t.Helper()
	var req *http.Request
	var err error
	switch mode {
	case "structured":
		req, err = cehttp.NewHTTPRequestFromEvent(binding.WithForceStructured(context.Background()), url, ces[0])
	case "binary":
		req, err = cehttp.NewHTTPRequestFromEvent(binding.WithForceBinary(context.Background()), url, ces[0])
	default:
		req, err = cehttp.NewHTTPRequestFromEvents(context.Background(), url, ces)
	}
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// want checks that the sink got exactly one Publish with the changes of
// the resources and kinds given, pairwise.
func (e *endpoint) wantOnePublish(t *testing.T, want ...cloudchange.Change) {
	t.Helper()
	calls := e.sink.published()
	if len(calls) != 1 {
		t.Fatalf("Publish calls: got %d, want 1: %+v", len(calls), calls)
	}
	got := calls[0]
	if len(got) != len(want) {
		t.Fatalf("changes: got %d, want %d: %+v", len(got), len(want), got)
	}
	for i, c := range got {
		w := want[i]
		if c.Cloud != "azure" || c.Source != SourceName || c.Tags != nil || c.Time.IsZero() ||
			c.Resource != w.Resource || c.Kind != w.Kind || c.ID != w.ID {
			t.Errorf("change %d: got %+v, want %s %s of %s", i, c, w.ID, w.Kind, w.Resource)
		}
	}
}

// counter reads one series of a webhook metric.
func counter(t *testing.T, name, label, value string) float64 {
	t.Helper()
	return testenv.Counter(t, "tagsync_eventgrid_"+name, map[string]string{label: value})
}

// wantRefused checks that do() answers status, counted under reason.
func wantRefused(t *testing.T, reason string, status int, do func() (int, string)) {
	t.Helper()
	before := counter(t, "refused_total", "reason", reason)
	got, body := do()
	if got != status {
		t.Fatalf("status: got %d (%s), want %d", got, strings.TrimSpace(body), status)
	}
	if after := counter(t, "refused_total", "reason", reason); after != before+1 {
		t.Errorf("refused_total{reason=%q}: got %v, want %v", reason, after, before+1)
	}
}
