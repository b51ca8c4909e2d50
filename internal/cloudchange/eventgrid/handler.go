package eventgrid

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

// retryAfter is the Retry-After of a 503: Event Grid's first retry is about
// this soon anyway.
const retryAfter = "10"

// refusal is a delivery's refusal: the status, the metric reason, the
// message the sender reads, and the cause, logged only.
type refusal struct {
	status int
	reason string
	msg    string
	cause  error
}

// ServeHTTP answers one request: an OPTIONS handshake (CloudEvents abuse
// protection) or a POST delivery.
func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var ref *refusal
	switch r.Method {
	case http.MethodOptions:
		ref = w.allowOrigin(rw, r)
	case http.MethodPost:
		ref = w.deliver(rw, r)
	default:
		rw.Header().Set("Allow", "POST, OPTIONS")
		ref = &refusal{status: http.StatusMethodNotAllowed, reason: reasonMethod, msg: "POST deliveries, OPTIONS handshakes"}
	}
	if ref != nil {
		w.refuse(rw, ref)
	}
}

// allowOrigin answers the CloudEvents abuse-protection handshake. It needs
// no credential: it only says this endpoint consents to deliveries, each of
// which is authenticated.
func (w *Webhook) allowOrigin(rw http.ResponseWriter, r *http.Request) *refusal {
	origin := r.Header.Get("WebHook-Request-Origin")
	if origin == "" {
		return &refusal{status: http.StatusBadRequest, reason: reasonMalformed, msg: "an OPTIONS handshake needs WebHook-Request-Origin"}
	}
	h := rw.Header()
	h.Set("WebHook-Allowed-Origin", origin)
	h.Set("WebHook-Allowed-Rate", "*")
	h.Set("Allow", "POST, OPTIONS")
	rw.WriteHeader(http.StatusOK)
	deliveriesTotal.WithLabelValues(resultHandshake).Inc()
	return nil
}

// deliver authenticates, reads and publishes one delivery, or answers the
// Event Grid schema's validation handshake.
func (w *Webhook) deliver(rw http.ResponseWriter, r *http.Request) *refusal {
	check := w.auth.check
	if r.Header.Get(ForwardedHeader) != "" {
		check = func(r *http.Request) *refusal { return w.checkPeer(rw, r) }
	}
	if ref := check(r); ref != nil {
		return ref
	}
	body, ref := readBody(rw, r, w.cfg.MaxBodyBytes)
	if ref != nil {
		return ref
	}
	evs, err := parseDelivery(r, body)
	if err != nil {
		return &refusal{status: http.StatusBadRequest, reason: reasonMalformed, msg: "malformed delivery: " + err.Error()}
	}
	if e, ok := validationEvent(evs); ok {
		return w.answerValidation(rw, e)
	}
	if !w.leader() {
		if done, ref := w.forward(rw, r, body); done {
			return ref
		}
	}
	changes, ref := w.accept(evs)
	if ref != nil {
		return ref
	}
	if err := w.publish(changes); err != nil {
		rw.Header().Set("Retry-After", retryAfter)
		return &refusal{status: http.StatusServiceUnavailable, reason: reasonQueueFull, msg: "the change queue is full: retry", cause: err}
	}
	rw.WriteHeader(http.StatusOK)
	deliveriesTotal.WithLabelValues(resultAccepted).Inc()
	return nil
}

// readBody reads at most limit bytes of the body.
func readBody(rw http.ResponseWriter, r *http.Request, limit int64) ([]byte, *refusal) {
	tooLarge := &refusal{status: http.StatusRequestEntityTooLarge, reason: reasonTooLarge,
		msg: fmt.Sprintf("a delivery holds at most %d bytes", limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, limit))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return nil, tooLarge
	case err != nil:
		return nil, &refusal{status: http.StatusBadRequest, reason: reasonMalformed, msg: "the body cannot be read", cause: err}
	}
	return body, nil
}

// validationEvent finds the Event Grid schema's subscription validation
// event (sent alone when the subscription is created).
func validationEvent(evs []gridEvent) (gridEvent, bool) {
	for _, e := range evs {
		if strings.EqualFold(e.EventType, typeValidation) {
			return e, true
		}
	}
	return gridEvent{}, false
}

// answerValidation echoes the validation code, proving that the endpoint
// wants the subscription's events.
func (w *Webhook) answerValidation(rw http.ResponseWriter, e gridEvent) *refusal {
	if e.Data.ValidationCode == "" {
		return &refusal{status: http.StatusBadRequest, reason: reasonMalformed, msg: "a validation event without data.validationCode"}
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(rw).Encode(map[string]string{"validationResponse": e.Data.ValidationCode})
	deliveriesTotal.WithLabelValues(resultHandshake).Inc()
	eventsTotal.WithLabelValues(typeLabel(e.EventType), outcomeIgnored).Inc()
	w.log.Info("answered an Event Grid subscription validation", "event", e.ID)
	return nil
}

// accept turns the events into changes: an event older than MaxAge is
// dropped, and so is an event tagsync ignores (see classify) or one whose
// ID was published recently. A delivery whose events are all too old is
// refused (400: Event Grid does not retry it), so that a replay is visible
// as such; it is no loss, since the restart's full pass and the polls cover
// what old events would have triggered.
func (w *Webhook) accept(evs []gridEvent) ([]cloudchange.Change, *refusal) {
	oldest := w.now().Add(-w.cfg.MaxAge)
	outcomes := make([]string, len(evs))
	var changes []cloudchange.Change
	tooOld := 0
	for i, e := range evs {
		var c *cloudchange.Change
		outcomes[i], c = w.admit(e, oldest)
		if c != nil {
			changes = append(changes, *c)
		}
		if outcomes[i] == outcomeTooOld {
			tooOld++
		}
	}
	for i, e := range evs {
		eventsTotal.WithLabelValues(typeLabel(e.EventType), outcomes[i]).Inc()
	}
	if tooOld == len(evs) {
		return nil, &refusal{status: http.StatusBadRequest, reason: reasonTooOld,
			msg: fmt.Sprintf("every event is older than %s", w.cfg.MaxAge)}
	}
	return changes, nil
}

// admit decides one event's outcome, and its change when published.
func (w *Webhook) admit(e gridEvent, oldest time.Time) (string, *cloudchange.Change) {
	if e.Time.Before(oldest) {
		return outcomeTooOld, nil
	}
	kind, resource, ok := classify(e)
	if !ok || resource == "" {
		return outcomeIgnored, nil
	}
	if !w.firstTime(e.ID) {
		return outcomeDuplicate, nil
	}
	return outcomePublished, &cloudchange.Change{Cloud: "azure", Resource: resource, Kind: kind, ID: e.ID, Time: e.Time,
		Source: SourceName, Operation: e.Data.CorrelationID, Writer: writerOf(e.Data.Claims)}
}

// publish hands one delivery's changes to the sink without waiting for the
// passes: Event Grid gets its 200 at once, and a pass that fails or a
// crash before it is covered by the next full pass. A full queue refuses
// them (cloudchange.ErrQueueFull): Event Grid must deliver them again.
func (w *Webhook) publish(changes []cloudchange.Change) error {
	if len(changes) == 0 {
		return nil
	}
	err := w.sink.Publish(changes, func(err error) {
		switch {
		case errors.Is(err, cloudchange.ErrKeptForRetry):
			w.log.V(1).Info("a pass triggered by a delivery runs again later", "changes", len(changes), "firstEvent", changes[0].ID,
				"why", err.Error())
		case err != nil:
			w.log.Error(err, "a pass triggered by a delivery failed", "changes", len(changes), "firstEvent", changes[0].ID)
		}
	})
	if err != nil {
		return err
	}
	w.delivered()
	return nil
}

// refuse answers a refusal and counts it. The request's URL and headers
// are never logged: they may carry the shared secret.
func (w *Webhook) refuse(rw http.ResponseWriter, ref *refusal) {
	result := resultRefused
	if ref.status == http.StatusServiceUnavailable {
		result = resultUnavailable
	}
	deliveriesTotal.WithLabelValues(result).Inc()
	refusedTotal.WithLabelValues(ref.reason).Inc()
	if ref.status == http.StatusUnauthorized && w.auth.bearer != nil {
		rw.Header().Set("WWW-Authenticate", `Bearer realm="eventgrid"`)
	}
	log := w.log.V(1)
	if ref.status == http.StatusServiceUnavailable && ref.reason != reasonNotLeader {
		log = w.log
	}
	log.Info("refused a delivery", "status", ref.status, "reason", ref.reason, "cause", errText(ref.cause))
	http.Error(rw, ref.msg, ref.status)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
