package armsim

import (
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Event Grid names, as the service spells them.
const (
	// TypeEventSubscription is the resource type of an event subscription.
	TypeEventSubscription = "Microsoft.EventGrid/eventSubscriptions"
	// SchemaEventGrid is the Event Grid event schema (the default).
	SchemaEventGrid = "EventGridSchema"
	// SchemaCloudEvents is the CloudEvents 1.0 schema.
	SchemaCloudEvents = "CloudEventSchemaV1_0"
	// EndpointWebHook is the only destination type armsim delivers to.
	EndpointWebHook = "WebHook"
)

// Provisioning states of an event subscription.
const (
	provisioningSucceeded    = "Succeeded"
	provisioningAwaitingHook = "AwaitingManualAction"
)

// EventSubscription is an Event Grid event subscription on a subscription
// scope, in ARM's wire shape.
type EventSubscription struct {
	// ID is /subscriptions/{sub}/providers/Microsoft.EventGrid/eventSubscriptions/{name}.
	ID string `json:"id,omitempty"`
	// Name of the event subscription.
	Name string `json:"name,omitempty"`
	// Type is TypeEventSubscription.
	Type string `json:"type,omitempty"`
	// Properties are what the subscription delivers, where and how.
	Properties EventSubscriptionProperties `json:"properties"`
}

// EventSubscriptionProperties are an event subscription's properties.
type EventSubscriptionProperties struct {
	// Topic is the scope the events come from, "/subscriptions/{sub}" (read-only).
	Topic string `json:"topic,omitempty"`
	// ProvisioningState is Succeeded, or AwaitingManualAction until the
	// validation URL is called (read-only).
	ProvisioningState string `json:"provisioningState,omitempty"`
	// Destination is the webhook events go to.
	Destination *EventSubscriptionDestination `json:"destination,omitempty"`
	// Filter selects the events delivered.
	Filter *EventSubscriptionFilter `json:"filter,omitempty"`
	// Labels are free-form.
	Labels []string `json:"labels,omitempty"`
	// EventDeliverySchema is SchemaEventGrid (default) or SchemaCloudEvents.
	EventDeliverySchema string `json:"eventDeliverySchema,omitempty"`
	// RetryPolicy bounds redeliveries.
	RetryPolicy *RetryPolicy `json:"retryPolicy,omitempty"`
}

// EventSubscriptionDestination is where events are delivered.
type EventSubscriptionDestination struct {
	// EndpointType must be EndpointWebHook.
	EndpointType string `json:"endpointType"`
	// Properties of the webhook.
	Properties WebHookDestination `json:"properties"`
}

// WebHookDestination is a webhook destination's properties.
type WebHookDestination struct {
	// EndpointURL receives the events; write-only (GET answers
	// EndpointBaseURL; POST .../getFullUrl answers the full URL).
	EndpointURL string `json:"endpointUrl,omitempty"`
	// EndpointBaseURL is EndpointURL without its query (read-only).
	EndpointBaseURL string `json:"endpointBaseUrl,omitempty"`
	// MaxEventsPerBatch is the most events in one POST (1..5000, default 1).
	MaxEventsPerBatch int `json:"maxEventsPerBatch,omitempty"`
	// PreferredBatchSizeInKilobytes caps a batch's size (1..1024, default 64);
	// a single larger event still goes alone.
	PreferredBatchSizeInKilobytes int `json:"preferredBatchSizeInKilobytes,omitempty"`
	// AzureActiveDirectoryTenantID is the tenant of the delivery token
	// (default: the server's tenant).
	AzureActiveDirectoryTenantID string `json:"azureActiveDirectoryTenantId,omitempty"`
	// AzureActiveDirectoryApplicationIDOrURI, when set, makes every request
	// carry a bearer token with this audience.
	AzureActiveDirectoryApplicationIDOrURI string `json:"azureActiveDirectoryApplicationIdOrUri,omitempty"`
}

// EventSubscriptionFilter selects events. Subject filters compare without
// regard to case unless IsSubjectCaseSensitive.
type EventSubscriptionFilter struct {
	// IncludedEventTypes lists the event types delivered (all when empty).
	IncludedEventTypes []string `json:"includedEventTypes,omitempty"`
	// SubjectBeginsWith is a prefix of the subject.
	SubjectBeginsWith string `json:"subjectBeginsWith,omitempty"`
	// SubjectEndsWith is a suffix of the subject.
	SubjectEndsWith string `json:"subjectEndsWith,omitempty"`
	// IsSubjectCaseSensitive makes the subject filters case-sensitive.
	IsSubjectCaseSensitive bool `json:"isSubjectCaseSensitive,omitempty"`
	// AdvancedFilters must all hold (at most 25).
	AdvancedFilters []AdvancedFilter `json:"advancedFilters,omitempty"`
}

// RetryPolicy bounds how long and how often an event is redelivered.
type RetryPolicy struct {
	// MaxDeliveryAttempts is 1..30 (default 30).
	MaxDeliveryAttempts int `json:"maxDeliveryAttempts,omitempty"`
	// EventTimeToLiveInMinutes is 1..1440 (default 1440).
	EventTimeToLiveInMinutes int `json:"eventTimeToLiveInMinutes,omitempty"`
}

// Limits and defaults of an event subscription, as Event Grid has them.
const (
	defaultMaxEventsPerBatch = 1
	maxMaxEventsPerBatch     = 5000
	defaultBatchKilobytes    = 64
	maxBatchKilobytes        = 1024
	defaultDeliveryAttempts  = 30
	defaultTTLMinutes        = 1440
	maxAdvancedFilters       = 25
)

// eventSubNamePattern is Event Grid's rule for subscription names.
var eventSubNamePattern = regexp.MustCompile(`^[A-Za-z0-9-]{3,64}$`)

// eventSubscriptionID builds the ID of an event subscription on a subscription.
func eventSubscriptionID(sub, name string) string {
	return "/subscriptions/" + sub + "/providers/" + TypeEventSubscription + "/" + name
}

// normalize validates a PUT body and fills in Event Grid's defaults.
func (p *EventSubscriptionProperties) normalize() *Error {
	d := p.Destination
	switch {
	case d == nil:
		return errInvalidEventSub("properties.destination is required.")
	case !strings.EqualFold(d.EndpointType, EndpointWebHook):
		return errInvalidEventSub("Endpoint type '%s' is not supported by armsim; use 'WebHook'.", d.EndpointType)
	}
	d.EndpointType = EndpointWebHook
	if e := d.Properties.normalize(); e != nil {
		return e
	}
	if e := p.normalizeSchema(); e != nil {
		return e
	}
	if e := p.normalizeRetry(); e != nil {
		return e
	}
	return p.Filter.validate()
}

// normalize checks a webhook's URL and batching.
func (w *WebHookDestination) normalize() *Error {
	u, err := url.Parse(w.EndpointURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errInvalidEventSub("The attempt to validate the provided endpoint %s failed: it is not an absolute http(s) URL.", w.EndpointURL)
	}
	base := *u
	base.RawQuery, base.Fragment = "", ""
	w.EndpointBaseURL = base.String()
	var e *Error
	if w.MaxEventsPerBatch, e = inRange("maxEventsPerBatch", w.MaxEventsPerBatch, defaultMaxEventsPerBatch, maxMaxEventsPerBatch); e != nil {
		return e
	}
	w.PreferredBatchSizeInKilobytes, e = inRange("preferredBatchSizeInKilobytes", w.PreferredBatchSizeInKilobytes, defaultBatchKilobytes, maxBatchKilobytes)
	return e
}

func (p *EventSubscriptionProperties) normalizeSchema() *Error {
	switch {
	case p.EventDeliverySchema == "" || strings.EqualFold(p.EventDeliverySchema, SchemaEventGrid):
		p.EventDeliverySchema = SchemaEventGrid
	case strings.EqualFold(p.EventDeliverySchema, SchemaCloudEvents):
		p.EventDeliverySchema = SchemaCloudEvents
	default:
		return errInvalidEventSub("Event delivery schema '%s' is not supported by armsim; use '%s' or '%s'.",
			p.EventDeliverySchema, SchemaEventGrid, SchemaCloudEvents)
	}
	return nil
}

func (p *EventSubscriptionProperties) normalizeRetry() *Error {
	if p.RetryPolicy == nil {
		p.RetryPolicy = &RetryPolicy{}
	}
	rp := p.RetryPolicy
	var e *Error
	if rp.MaxDeliveryAttempts, e = inRange("maxDeliveryAttempts", rp.MaxDeliveryAttempts, defaultDeliveryAttempts, defaultDeliveryAttempts); e != nil {
		return e
	}
	rp.EventTimeToLiveInMinutes, e = inRange("eventTimeToLiveInMinutes", rp.EventTimeToLiveInMinutes, defaultTTLMinutes, defaultTTLMinutes)
	return e
}

// inRange returns v, or def when v is zero, and an error outside 1..most.
func inRange(field string, v, def, most int) (int, *Error) {
	if v == 0 {
		return def, nil
	}
	if v < 1 || v > most {
		return 0, errInvalidEventSub("%s must be between 1 and %d; it is %d.", field, most, v)
	}
	return v, nil
}

func errInvalidEventSub(format string, args ...any) *Error {
	return errBadRequest("InvalidRequest", format, args...)
}

func errEventSubNotFound(name string) *Error {
	return newError(http.StatusNotFound, "ResourceNotFound",
		"The Resource '%s/%s' under the subscription scope was not found.", TypeEventSubscription, name)
}

// public is the subscription as GET shows it: no endpointUrl.
func (es EventSubscription) public() EventSubscription {
	out := es
	if d := es.Properties.Destination; d != nil {
		dc := *d
		dc.Properties.EndpointURL = ""
		out.Properties.Destination = &dc
	}
	return out
}

// handleEventSubPut creates or updates an event subscription. A new
// endpoint (or delivery schema) must pass the validation handshake first.
func (s *Server) handleEventSubPut(w http.ResponseWriter, r *http.Request, rt *route) {
	name := rt.segs[5]
	if !eventSubNamePattern.MatchString(name) {
		writeError(w, errInvalidEventSub("Event subscription name '%s' must be 3 to 64 letters, digits or '-'.", name))
		return
	}
	var body EventSubscription
	if e := readJSON(r, &body); e != nil {
		writeError(w, e)
		return
	}
	if e := s.requireSubscription(rt.sub); e != nil {
		writeError(w, e)
		return
	}
	if e := body.Properties.normalize(); e != nil {
		writeError(w, e)
		return
	}
	body.ID, body.Name, body.Type = eventSubscriptionID(rt.sub, name), name, TypeEventSubscription
	body.Properties.Topic = "/subscriptions/" + rt.sub
	created, e := s.eg.put(r.Context(), body)
	if e != nil {
		writeError(w, e)
		return
	}
	status := http.StatusOK
	if created.new {
		status = http.StatusCreated
	}
	writeJSON(w, status, created.spec.public())
}

// requireSubscription answers 404 for a subscription armsim does not have.
func (s *Server) requireSubscription(sub string) *Error {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	if _, ok := s.st.subs[strings.ToLower(sub)]; !ok {
		return errSubscriptionNotFound(sub)
	}
	return nil
}

func (s *Server) handleEventSubGet(w http.ResponseWriter, _ *http.Request, rt *route) {
	es, ok := s.eg.get(eventSubscriptionID(rt.sub, rt.segs[5]))
	if !ok {
		writeError(w, errEventSubNotFound(rt.segs[5]))
		return
	}
	writeJSON(w, http.StatusOK, es.public())
}

// handleEventSubDelete removes a subscription and what it had not
// delivered yet: 200, or 204 when there was none.
func (s *Server) handleEventSubDelete(w http.ResponseWriter, _ *http.Request, rt *route) {
	if !s.eg.remove(eventSubscriptionID(rt.sub, rt.segs[5])) {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleEventSubList lists the subscription's event subscriptions.
func (s *Server) handleEventSubList(w http.ResponseWriter, _ *http.Request, rt *route) {
	if e := s.requireSubscription(rt.sub); e != nil {
		writeError(w, e)
		return
	}
	prefix := strings.ToLower("/subscriptions/" + rt.sub + "/")
	page := listPage{Value: []any{}}
	all := s.eg.list()
	sort.Slice(all, func(i, j int) bool { return strings.ToLower(all[i].ID) < strings.ToLower(all[j].ID) })
	for _, es := range all {
		if strings.HasPrefix(strings.ToLower(es.ID), prefix) {
			page.Value = append(page.Value, es.public())
		}
	}
	writeJSON(w, http.StatusOK, page)
}

// handleEventSubFullURL answers the full endpoint URL (POST .../getFullUrl).
func (s *Server) handleEventSubFullURL(w http.ResponseWriter, _ *http.Request, rt *route) {
	es, ok := s.eg.get(eventSubscriptionID(rt.sub, rt.segs[5]))
	if !ok {
		writeError(w, errEventSubNotFound(rt.segs[5]))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"endpointUrl": es.Properties.Destination.Properties.EndpointURL})
}

// eventGridRoutes matches /subscriptions/{sub}/providers/Microsoft.EventGrid/eventSubscriptions[/{name}[/getFullUrl]].
func eventGridRoutes(rt *route) methods {
	base := []string{"subscriptions", "*", "providers", "microsoft.eventgrid", "eventsubscriptions"}
	switch {
	case rt.is(base...):
		return get("EventSubscriptions.ListGlobalBySubscription", (*Server).handleEventSubList)
	case rt.is(append(base, "*")...):
		return methods{
			http.MethodGet:    {"EventSubscriptions.Get", (*Server).handleEventSubGet},
			http.MethodPut:    {"EventSubscriptions.CreateOrUpdate", (*Server).handleEventSubPut},
			http.MethodDelete: {"EventSubscriptions.Delete", (*Server).handleEventSubDelete},
		}
	case rt.is(append(base, "*", "getfullurl")...):
		return methods{http.MethodPost: {"EventSubscriptions.GetFullURL", (*Server).handleEventSubFullURL}}
	}
	return nil
}
