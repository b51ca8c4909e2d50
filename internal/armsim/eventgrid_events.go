package armsim

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"time"
)

// Event types armsim publishes, as Event Grid names them.
const (
	// EventResourceWriteSuccess: a PUT or PATCH succeeded.
	EventResourceWriteSuccess = "Microsoft.Resources.ResourceWriteSuccess"
	// EventResourceDeleteSuccess: a DELETE succeeded.
	EventResourceDeleteSuccess = "Microsoft.Resources.ResourceDeleteSuccess"
	// EventResourceActionSuccess: a POST action succeeded.
	EventResourceActionSuccess = "Microsoft.Resources.ResourceActionSuccess"
	// EventSubscriptionValidation is the validation handshake's event.
	EventSubscriptionValidation = "Microsoft.EventGrid.SubscriptionValidationEvent"
)

// Versions Event Grid stamps on resource events.
const (
	resourceDataVersion = "2"
	metadataVersion     = "1"
)

// eventTypeByMethod maps the HTTP method of a served write to its event.
var eventTypeByMethod = map[string]string{
	http.MethodPut:    EventResourceWriteSuccess,
	http.MethodPatch:  EventResourceWriteSuccess,
	http.MethodDelete: EventResourceDeleteSuccess,
	http.MethodPost:   EventResourceActionSuccess,
}

// resourceEvent is one event in neither schema yet: render picks one.
type resourceEvent struct {
	ID, Topic, Subject, EventType, DataVersion string
	Time                                       time.Time
	Data                                       any
	fields                                     map[string]any // Data as JSON with lower-cased keys, for filters
}

// resourceEventData is the data of a Microsoft.Resources event.
type resourceEventData struct {
	Authorization    *eventAuthorization `json:"authorization,omitempty"`
	Claims           map[string]string   `json:"claims,omitempty"`
	CorrelationID    string              `json:"correlationId"`
	HTTPRequest      *eventHTTPRequest   `json:"httpRequest,omitempty"`
	ResourceProvider string              `json:"resourceProvider"`
	ResourceURI      string              `json:"resourceUri"`
	OperationName    string              `json:"operationName"`
	Status           string              `json:"status"`
	SubscriptionID   string              `json:"subscriptionId"`
	TenantID         string              `json:"tenantId"`
	ResourceGroup    string              `json:"resourceGroup,omitempty"`
}

type eventAuthorization struct {
	Scope  string `json:"scope"`
	Action string `json:"action"`
}

type eventHTTPRequest struct {
	ClientRequestID string `json:"clientRequestId,omitempty"`
	ClientIPAddress string `json:"clientIpAddress,omitempty"`
	Method          string `json:"method"`
	URL             string `json:"url"`
}

// gridEvent is the Event Grid schema.
type gridEvent struct {
	ID              string    `json:"id"`
	Topic           string    `json:"topic"`
	Subject         string    `json:"subject"`
	EventType       string    `json:"eventType"`
	EventTime       time.Time `json:"eventTime"`
	Data            any       `json:"data"`
	DataVersion     string    `json:"dataVersion"`
	MetadataVersion string    `json:"metadataVersion"`
}

// cloudEvent is the CloudEvents 1.0 structured JSON shape.
type cloudEvent struct {
	SpecVersion string    `json:"specversion"`
	Type        string    `json:"type"`
	Source      string    `json:"source"`
	Subject     string    `json:"subject"`
	ID          string    `json:"id"`
	Time        time.Time `json:"time"`
	Data        any       `json:"data"`
}

// render encodes the event in schema.
func (ev *resourceEvent) render(schema string) json.RawMessage {
	var v any = gridEvent{ID: ev.ID, Topic: ev.Topic, Subject: ev.Subject, EventType: ev.EventType,
		EventTime: ev.Time, Data: ev.Data, DataVersion: ev.DataVersion, MetadataVersion: metadataVersion}
	if schema == SchemaCloudEvents {
		v = cloudEvent{SpecVersion: "1.0", Type: ev.EventType, Source: ev.Topic, Subject: ev.Subject,
			ID: ev.ID, Time: ev.Time, Data: ev.Data}
	}
	data, _ := json.Marshal(v)
	return data
}

// field returns the value of an advanced filter key, if it is a string.
func (ev *resourceEvent) field(key string) (string, bool) {
	switch strings.ToLower(key) {
	case "id":
		return ev.ID, true
	case "topic", "source":
		return ev.Topic, true
	case "subject":
		return ev.Subject, true
	case "eventtype", "type":
		return ev.EventType, true
	}
	if len(key) < 5 || !strings.EqualFold(key[:5], "data.") {
		return "", false
	}
	if ev.fields == nil {
		var raw any
		data, _ := json.Marshal(ev.Data)
		_ = json.Unmarshal(data, &raw)
		ev.fields, _ = lowerKeys(raw).(map[string]any)
	}
	var cur any = ev.fields
	for _, name := range strings.Split(strings.ToLower(key[5:]), ".") {
		obj, _ := cur.(map[string]any)
		if cur = obj[name]; cur == nil {
			return "", false
		}
	}
	s, ok := cur.(string)
	return s, ok
}

// lowerKeys returns decoded JSON with every object key in lower case, so
// that filter keys match without regard to case.
func lowerKeys(v any) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(obj))
	for k, x := range obj {
		out[strings.ToLower(k)] = lowerKeys(x)
	}
	return out
}

// writeOrigin is who made a write: the caller's claims and request for an
// ARM request, nothing for an out-of-band edit.
type writeOrigin struct {
	correlationID string
	claims        map[string]string
	request       *eventHTTPRequest
}

// originOf describes the ARM request r.
func (s *Server) originOf(r *http.Request) writeOrigin {
	o := writeOrigin{correlationID: r.Header.Get(correlationHeader)}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	o.request = &eventHTTPRequest{ClientRequestID: r.Header.Get("x-ms-client-request-id"), ClientIPAddress: host,
		Method: r.Method, URL: baseURL(r) + r.URL.RequestURI()}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if c, err := s.parseToken(strings.TrimSpace(tok)); err == nil {
			o.claims = map[string]string{"aud": c.Aud, "iss": c.Iss, "appid": c.AppID, "tid": c.Tid, "oid": c.Oid, "idtyp": c.Idtyp}
			if c.UPN != "" {
				o.claims["upn"] = c.UPN
			}
		}
	}
	return o
}

// emitServed publishes the event of a management-plane write armsim has
// just answered with status: PUT, PATCH, POST and DELETE that succeeded,
// not reads and not Resource Graph queries.
func (s *Server) emitServed(r *http.Request, rt *route, status int) {
	eventType, ok := eventTypeByMethod[r.Method]
	if !ok || rt.kind != kindARM || rt.op == opGraph || status < 200 || status > 299 || !s.eg.active() {
		return
	}
	if rt.scope != "" {
		// Deleting the tags at a scope changes the tagged resource; it
		// deletes nothing.
		eventType = EventResourceWriteSuccess
	}
	uri, opName := writeTarget(r.Method, rt)
	s.publish(eventType, uri, opName, s.originOf(r))
}

// writeTarget returns the resource a served write changed and its
// operation name: for the Tags API the tags resource of the tagged scope
// ({scope}/providers/Microsoft.Resources/tags/default, as Azure names it)
// and Microsoft.Resources/tags/{write,delete}; for a POST action the resource
// before the action's name and {type}/{action}/action; else the path and
// {type}/{write,delete}.
func writeTarget(method string, rt *route) (string, string) {
	verb := "write"
	if method == http.MethodDelete {
		verb = "delete"
	}
	if rt.scope != "" {
		return tagsEventID(rt.scope), "Microsoft.Resources/tags/" + verb
	}
	segs := rt.segs
	if method == http.MethodPost && len(segs) > 0 {
		verb = segs[len(segs)-1] + "/action"
		segs = segs[:len(segs)-1]
	}
	return "/" + strings.Join(segs, "/"), resourceTypeOf(segs) + "/" + verb
}

// resourceTypeOf returns the type of the resource a path names:
// {namespace}/{type}[/{child type}...] after its last "providers", or a
// subscription's or resource group's type.
func resourceTypeOf(segs []string) string {
	i := len(segs) - 1
	for i >= 0 && !strings.EqualFold(segs[i], "providers") {
		i--
	}
	if i < 0 || i+1 >= len(segs) {
		if len(segs) >= 4 {
			return TypeResourceGroup
		}
		return TypeSubscription
	}
	types := []string{segs[i+1]}
	for j := i + 2; j < len(segs); j += 2 {
		types = append(types, segs[j])
	}
	return strings.Join(types, "/")
}

// tagsEventID is the ID of a scope's tags as the Tags API's events name
// it: the scope, then /providers/Microsoft.Resources/tags/default.
func tagsEventID(scope string) string {
	return strings.TrimSuffix(scope, "/") + "/providers/Microsoft.Resources/tags/default"
}

// publishOutOfBand publishes the event of an out-of-band write (the admin
// API's portal edits, scale-outs and deletes).
func (s *Server) publishOutOfBand(eventType, uri, opName string) {
	if s.eg.active() {
		s.publish(eventType, uri, opName, writeOrigin{})
	}
}

// publish builds a Microsoft.Resources event and offers it to every event
// subscription.
func (s *Server) publish(eventType, uri, opName string, o writeOrigin) {
	segs := splitPath(uri)
	data := resourceEventData{
		Authorization: &eventAuthorization{Scope: uri, Action: opName},
		Claims:        o.claims, CorrelationID: firstNonEmpty(o.correlationID, newUUID()), HTTPRequest: o.request,
		ResourceURI: uri, OperationName: opName, Status: statusSucceeded, TenantID: s.opts.TenantID,
	}
	data.ResourceProvider, _, _ = strings.Cut(opName, "/")
	if len(segs) >= 2 {
		data.SubscriptionID = segs[1]
	}
	if len(segs) >= 4 && strings.EqualFold(segs[2], "resourceGroups") {
		data.ResourceGroup = segs[3]
	}
	s.eg.publish(&resourceEvent{
		ID: newUUID(), Topic: "/subscriptions/" + data.SubscriptionID, Subject: uri, EventType: eventType,
		DataVersion: resourceDataVersion, Time: s.opts.Clock.Now().UTC(), Data: data,
	})
}
