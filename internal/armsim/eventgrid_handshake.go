package armsim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// eventGridOrigin is the origin Event Grid announces in the CloudEvents
// abuse-protection handshake.
const eventGridOrigin = "eventgrid.azure.net"

// validationData is the data of a SubscriptionValidationEvent.
type validationData struct {
	ValidationCode string `json:"validationCode"`
	ValidationURL  string `json:"validationUrl"`
}

// handshake proves the subscriber owns the endpoint, as Event Grid does
// before it delivers anything, and returns the provisioning state.
//
// Event Grid schema: a POST of a SubscriptionValidationEvent; the answer
// must be 2xx with {"validationResponse": code} (Succeeded), or 2xx
// without it, and then a GET of the validation URL completes the
// validation (AwaitingManualAction until then). CloudEvents schema: an
// OPTIONS request with WebHook-Request-Origin; the answer must be 2xx with
// WebHook-Allowed-Origin: eventgrid.azure.net (or *).
func (eg *eventGrid) handshake(ctx context.Context, spec EventSubscription, code string) (string, *Error) {
	ctx, cancel := context.WithTimeout(ctx, eg.opts.HandshakeTimeout)
	defer cancel()
	if spec.Properties.EventDeliverySchema == SchemaCloudEvents {
		return provisioningSucceeded, eg.cloudEventsHandshake(ctx, spec)
	}
	return eg.validationHandshake(ctx, spec, code)
}

// validationHandshake is the Event Grid schema's handshake.
func (eg *eventGrid) validationHandshake(ctx context.Context, spec EventSubscription, code string) (string, *Error) {
	ev := &resourceEvent{
		ID: newUUID(), Topic: spec.Properties.Topic, EventType: EventSubscriptionValidation,
		DataVersion: resourceDataVersion, Time: eg.s.opts.Clock.Now().UTC(),
		Data: validationData{ValidationCode: code, ValidationURL: eg.validationURL(spec.ID, code)},
	}
	h := http.Header{}
	h.Set("Content-Type", contentTypeJSON)
	h.Set("aeg-event-type", "SubscriptionValidation")
	h.Set("aeg-subscription-name", strings.ToUpper(spec.Name))
	body := append(append([]byte("["), ev.render(SchemaEventGrid)...), ']')
	ans, err := eg.send(ctx, http.MethodPost, spec, body, h)
	if e := answerFailed(spec, http.MethodPost, ans, err); e != nil {
		return "", e
	}
	var got struct {
		ValidationResponse string `json:"validationResponse"`
	}
	_ = json.Unmarshal(ans.body, &got)
	switch {
	case got.ValidationResponse == "":
		return provisioningAwaitingHook, nil
	case !strings.EqualFold(got.ValidationResponse, code):
		return "", errHandshake(spec, fmt.Sprintf("The validation response '%s' does not match the validation code sent.", got.ValidationResponse))
	}
	return provisioningSucceeded, nil
}

// cloudEventsHandshake is the CloudEvents abuse-protection handshake.
func (eg *eventGrid) cloudEventsHandshake(ctx context.Context, spec EventSubscription) *Error {
	h := http.Header{}
	h.Set("WebHook-Request-Origin", eventGridOrigin)
	h.Set("WebHook-Request-Rate", "*")
	ans, err := eg.send(ctx, http.MethodOptions, spec, nil, h)
	if e := answerFailed(spec, http.MethodOptions, ans, err); e != nil {
		return e
	}
	switch allowed := ans.header.Get("WebHook-Allowed-Origin"); {
	case allowed == "*" || strings.EqualFold(allowed, eventGridOrigin):
		return nil
	case allowed == "":
		return errHandshake(spec, "Http OPTIONS request returned 2xx without a WebHook-Allowed-Origin header.")
	default:
		return errHandshake(spec, fmt.Sprintf("WebHook-Allowed-Origin '%s' does not allow %s.", allowed, eventGridOrigin))
	}
}

// answerFailed is the handshake error for a request that failed or was
// answered with a status other than 2xx; nil otherwise.
func answerFailed(spec EventSubscription, method string, ans hookAnswer, err error) *Error {
	if err != nil {
		return errHandshake(spec, fmt.Sprintf("Http %s request failed with response code Unknown: %v.", method, withoutURL(err)))
	}
	if ans.status < 200 || ans.status > 299 {
		return errHandshake(spec, fmt.Sprintf("Http %s request failed with response code %d.", method, ans.status))
	}
	return nil
}

// errHandshake is Event Grid's answer to a failed handshake.
func errHandshake(spec EventSubscription, detail string) *Error {
	return errBadRequest("Url validation", "Webhook validation handshake failed for %s. %s For troubleshooting, visit https://aka.ms/esvalidation.",
		spec.Properties.Destination.Properties.EndpointBaseURL, detail)
}

// validationURL is the URL whose GET completes a manual validation.
func (eg *eventGrid) validationURL(id, code string) string {
	return eg.s.URL() + "/_admin/eventgrid/validate?" + url.Values{"id": {id}, "code": {code}}.Encode()
}
