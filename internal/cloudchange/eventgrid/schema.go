package eventgrid

import (
	"github.com/tagsync/tagsync/internal/cloudchange"

	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// gridEvent is one event of either schema, with the fields tagsync reads.
type gridEvent struct {
	ID        string
	EventType string
	Subject   string
	Time      time.Time
	Data      eventData
}

// eventData is the part of an ARM event's data (and of a validation
// event's) that tagsync reads.
type eventData struct {
	ResourceURI    string `json:"resourceUri"`
	OperationName  string `json:"operationName"`
	ValidationCode string `json:"validationCode"`
	// CorrelationID is the ARM correlation ID of the write: tagsync's own
	// writes carry IDs it knows (cloudchange.Change.Operation).
	CorrelationID string `json:"correlationId"`
	// Claims are the claims of the caller's token (ARM events): who made
	// the write (writerOf). Values other than strings are not read.
	Claims map[string]any `json:"claims"`
}

// Claim names a person's token carries, short and as Azure's event
// claims spell them.
const (
	claimUPN         = "upn"
	claimUPNURI      = "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn"
	claimUniqueName  = "unique_name"
	claimObjectID    = "oid"
	claimObjectIDURI = "http://schemas.microsoft.com/identity/claims/objectidentifier"
)

// writerOf is who made an ARM write, from the claims of its event: a
// person when the token's idtyp is "user", or, without an idtyp, when it
// names a user principal (upn, unique_name); an application otherwise
// (idtyp "app", an appid alone: a service principal, a managed identity,
// a resource provider such as AKS's or Azure Policy's).
func writerOf(claims map[string]any) cloudchange.Writer {
	if len(claims) == 0 {
		return cloudchange.Writer{}
	}
	upn := firstOf(claims, claimUPN, claimUPNURI, claimUniqueName)
	idtyp := firstOf(claims, "idtyp")
	person := idtyp == "user" || (idtyp == "" && upn != "")
	id := upn
	if !person || id == "" {
		id = firstOf(claims, "appid", "azp", claimObjectID, claimObjectIDURI)
	}
	return cloudchange.Writer{ID: id, Person: person}
}

// firstOf is the first of claims' values for names that is not empty.
func firstOf(claims map[string]any, names ...string) string {
	for _, n := range names {
		if v, ok := claims[n].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

// gridSchemaEvent is an event in the Event Grid schema.
type gridSchemaEvent struct {
	ID        string          `json:"id"`
	EventType string          `json:"eventType"`
	Subject   string          `json:"subject"`
	EventTime time.Time       `json:"eventTime"`
	Data      json.RawMessage `json:"data"`
}

// parseDelivery reads the events of a delivery whose body was already read:
// CloudEvents (structured, binary or batched) when the request says so,
// else the Event Grid schema (a JSON array). Every event needs an ID, a
// type and a time.
func parseDelivery(r *http.Request, body []byte) ([]gridEvent, error) {
	var evs []gridEvent
	var err error
	switch enc := cehttp.NewMessage(r.Header, nil).ReadEncoding(); enc {
	case binding.EncodingUnknown:
		evs, err = parseGridSchema(body)
	default:
		evs, err = parseCloudEvents(r, body, enc == binding.EncodingBatch)
	}
	if err != nil {
		return nil, err
	}
	return evs, complete(evs)
}

// parseGridSchema reads a JSON array of Event Grid schema events.
func parseGridSchema(body []byte) ([]gridEvent, error) {
	var raw []gridSchemaEvent
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("not an Event Grid schema array: %w", err)
	}
	evs := make([]gridEvent, 0, len(raw))
	for _, e := range raw {
		g := gridEvent{ID: e.ID, EventType: e.EventType, Subject: e.Subject, Time: e.EventTime}
		if err := unmarshalData(e.Data, &g.Data); err != nil {
			return nil, fmt.Errorf("event %s: %w", e.ID, err)
		}
		evs = append(evs, g)
	}
	return evs, nil
}

// parseCloudEvents reads CloudEvents 1.0 with the SDK's HTTP binding.
func parseCloudEvents(r *http.Request, body []byte, batch bool) ([]gridEvent, error) {
	req := r.Clone(r.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	var ces []event.Event
	if batch {
		all, err := cehttp.NewEventsFromHTTPRequest(req)
		if err != nil {
			return nil, fmt.Errorf("not a CloudEvents batch: %w", err)
		}
		ces = all
	} else {
		ce, err := cehttp.NewEventFromHTTPRequest(req)
		if err != nil {
			return nil, fmt.Errorf("not a CloudEvent: %w", err)
		}
		ces = []event.Event{*ce}
	}
	evs := make([]gridEvent, 0, len(ces))
	for _, ce := range ces {
		if err := ce.Validate(); err != nil {
			return nil, fmt.Errorf("event %s: %w", ce.ID(), err)
		}
		g := gridEvent{ID: ce.ID(), EventType: ce.Type(), Subject: ce.Subject(), Time: ce.Time()}
		if err := unmarshalData(ce.Data(), &g.Data); err != nil {
			return nil, fmt.Errorf("event %s: %w", ce.ID(), err)
		}
		evs = append(evs, g)
	}
	return evs, nil
}

// unmarshalData reads an event's data; absent data is no error.
func unmarshalData(raw []byte, d *eventData) error {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	if err := json.Unmarshal(raw, d); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return nil
}
