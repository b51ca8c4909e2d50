package eventgrid

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

// The event types tagsync knows. Type names compare without regard to case.
const (
	typeValidation = "Microsoft.EventGrid.SubscriptionValidationEvent"
	typeDeleted    = "Microsoft.EventGrid.SubscriptionDeletedEvent"
	typeWrite      = "Microsoft.Resources.ResourceWriteSuccess"
	typeDelete     = "Microsoft.Resources.ResourceDeleteSuccess"
	typeAction     = "Microsoft.Resources.ResourceActionSuccess"
)

// knownTypes maps the lower-cased event types of a subscription's system
// topic (and Event Grid's own) to their metric label; any other type is
// "other", so a sender cannot grow the metric's series.
var knownTypes = func() map[string]string {
	m := map[string]string{}
	for _, t := range []string{typeValidation, typeDeleted} {
		m[strings.ToLower(t)] = t[len("Microsoft.EventGrid."):]
	}
	for _, op := range []string{"Write", "Delete", "Action"} {
		for _, result := range []string{"Success", "Failure", "Cancel"} {
			t := "Resource" + op + result
			m[strings.ToLower("Microsoft.Resources."+t)] = t
		}
	}
	return m
}()

// typeLabel is the event type's metric label.
func typeLabel(eventType string) string {
	if l, ok := knownTypes[strings.ToLower(eventType)]; ok {
		return l
	}
	return "other"
}

// tagsSuffix ends the ID of a resource's tags (the Tags API's
// {scope}/providers/Microsoft.Resources/tags/default).
const tagsSuffix = "/providers/microsoft.resources/tags/default"

// classify says what an event means for tagsync: the Kind and the resource
// ID of the change, or ok false when tagsync ignores the event.
//
//   - ResourceWriteSuccess: KindWrite (a PUT or PATCH of the resource, its
//     tags included, or of its tags alone).
//   - ResourceDeleteSuccess: KindDelete, except the Tags API's DELETE (all of
//     a resource's tags removed, operation Microsoft.Resources/tags/delete),
//     which is a KindWrite of the resource.
//   - ResourceActionSuccess: ignored. ARM changes tags only by PUT, PATCH
//     and DELETE (of the resource or of its tags/default); a POST action
//     (start, deallocate, restart, listKeys, ...) never does.
//   - Failure and Cancel events, Event Grid's own and unknown types: ignored.
//
// A change of tags/default names the resource that carries the tags: the
// ID with /providers/Microsoft.Resources/tags/default cut off.
func classify(e gridEvent) (kind cloudchange.Kind, resource string, ok bool) {
	resource = e.Data.ResourceURI
	if resource == "" {
		resource = e.Subject
	}
	switch {
	case strings.EqualFold(e.EventType, typeWrite):
		kind = cloudchange.KindWrite
	case strings.EqualFold(e.EventType, typeDelete):
		kind = cloudchange.KindDelete
	default:
		return "", "", false
	}
	if cut := len(resource) - len(tagsSuffix); cut >= 0 && strings.EqualFold(resource[cut:], tagsSuffix) {
		return cloudchange.KindWrite, resource[:cut], true
	}
	return kind, resource, true
}

// complete checks that a delivery has events, each with an ID, a type and
// a time.
func complete(evs []gridEvent) error {
	if len(evs) == 0 {
		return errors.New("no event in the delivery")
	}
	for i, e := range evs {
		if e.ID == "" || e.EventType == "" || e.Time.IsZero() {
			return fmt.Errorf("event %d lacks an id, a type or a time", i)
		}
	}
	return nil
}
