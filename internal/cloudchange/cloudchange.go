// Package cloudchange carries change notifications from the clouds to the
// controllers, so that a tag edited in the cloud reaches Kubernetes in
// seconds instead of at the next poll.
//
// A Source receives notifications from one cloud (Azure Event Grid through
// an HTTPS webhook; AWS EventBridge through an SQS queue), turns each into
// Changes and publishes them to a Sink. The Sink (the Hub) queues them,
// bounded, and hands them to the controllers, which turn a change into a
// targeted pass of exactly the objects that own the changed resource (the
// controllers' side, their subscription and the changes pending per object,
// is kit.Subscriber and kit.Pending in internal/controller/kit).
// Polling stays as a slow safety net and as the fallback while a source is
// down (Health).
//
// Delivery is at least once and in no particular order: a change may come
// twice, late, or about a resource no object owns. None of these causes a
// write, because a pass writes only what differs from what it reads.
package cloudchange

import (
	"context"
	"errors"
	"time"

	"github.com/tagsync/tagsync/internal/tags"
)

// Kind says what happened to a resource.
type Kind string

const (
	// KindWrite: the resource was created or changed, its tags included.
	KindWrite Kind = "Write"
	// KindDelete: the resource was deleted.
	KindDelete Kind = "Delete"
	// KindState: the resource's run state changed (an instance started,
	// stopped or terminated); its tags did not.
	KindState Kind = "State"
)

// Change is one change a cloud reported about one resource.
type Change struct {
	// Cloud is the provider's name ("azure", "aws").
	Cloud string
	// Resource identifies the resource as the event names it: an ARM
	// resource ID on Azure, an ARN on AWS.
	Resource string
	// Kind says what happened.
	Kind Kind
	// Tags are the resource's tags after the change when the event carries
	// them (AWS "Tag Change on Resource"), nil when it does not (Azure): a
	// pass then reads the resource.
	Tags tags.Set
	// ID is the event's ID, the same on every redelivery of one event.
	ID string
	// Time is when the cloud made the change.
	Time time.Time
	// Source names the Source that delivered the change.
	Source string
	// Operation identifies the cloud operation that made the change when
	// the event names it (Azure: the ARM correlation ID), "" otherwise. A
	// change made by one of tagsync's own writes is not routed to the
	// object whose pass wrote (HubOptions.OwnWrites).
	Operation string
	// EchoOf is, in the change a controller's Router is given, the key of
	// that controller's object whose own write made the change (set by
	// the hub): the router routes the change to the controller's other
	// objects and not to that one. "" for every other change.
	EchoOf string
	// Received is when the hub took the change (set by the hub): a read
	// sent after it shows the change (cloud.WithReadAfter).
	Received time.Time
	// Writer is who made the change, when the event names them (Azure:
	// the caller's claims); zero otherwise.
	Writer Writer
}

// Writer is the identity that made a cloud change.
type Writer struct {
	// ID names the identity (a user principal name or object ID, an
	// application ID); "" when the event names none.
	ID string
	// Person is set when the identity is a person (a user signed in to
	// the portal or the CLI), not an application, a managed identity or a
	// platform's resource provider. Only a person's removal of a tag is
	// taken as the wish to delete it whatever side it came from.
	Person bool
}

// ErrKeptForRetry is the error of a delivery whose changes a pass did not
// finish though it ended without an error: it was throttled, or some of
// the changes failed, and it keeps them for a retry of its own. A source
// treats it as a failed pass: an SQS message stays on the queue, to be
// received again.
var ErrKeptForRetry = errors.New("the pass kept the changes for its retry")

// ErrQueueFull is Publish's refusal of a delivery that does not fit in the
// hub's queue: the source must not acknowledge it (the webhook answers
// 503, an SQS message stays on the queue), so that it is delivered again.
var ErrQueueFull = errors.New("the change queue is full")

// Sink takes the changes sources receive.
type Sink interface {
	// Publish hands over the changes of one delivery. done is called
	// exactly once: with nil when every pass the changes triggered has
	// completed (at once when they concern no object, or were published
	// recently), or with an error when a pass failed or kept the changes
	// for a retry of its own (ErrKeptForRetry). A source acknowledges a
	// delivery (SQS: deletes the message) only after done(nil). Publish
	// does not block on the passes. When the queue is full it returns
	// ErrQueueFull and never calls done: the delivery was not taken, and
	// the source must have it delivered again.
	Publish(changes []Change, done func(error)) error
}

// Source is one stream of cloud changes. It runs as a controller-runtime
// Runnable (Start blocks until ctx ends) and publishes to the Sink it was
// built with.
type Source interface {
	// Name names the source in logs, metrics and status ("eventgrid",
	// "sqs").
	Name() string
	// Start receives and publishes changes until ctx ends.
	Start(ctx context.Context) error
	// Health says whether the source delivers.
	Health() Health
}

// Health says whether a source delivers changes. While a source is down the
// controllers poll at their configured interval instead of the long
// safety-net interval.
type Health struct {
	// Up is true while the source receives (or can receive) deliveries.
	Up bool
	// Reason says why the source is down, in words.
	Reason string
	// Since is when Up last changed.
	Since time.Time
	// LastDelivery is when the source last published a change.
	LastDelivery time.Time
	// Silent, in the hub's Health, says which clouds' events stopped
	// arriving though the sources are up, and why ("" while none did): the
	// controllers poll at their configured intervals meanwhile.
	Silent string
}
