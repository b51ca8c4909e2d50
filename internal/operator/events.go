package operator

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/eventgrid"
)

// EventSource builds one source of cloud changes that publishes to sink
// (the hub). Adding a source to `tagsync run` is one entry in
// EventsOptions.Sources.
type EventSource func(sink cloudchange.Sink) (cloudchange.Source, error)

// BuiltSource is the EventSource of a source built already (a test's,
// whose health the test sets; it publishes to the hub the test gave).
func BuiltSource(s cloudchange.Source) EventSource {
	return func(cloudchange.Sink) (cloudchange.Source, error) { return s, nil }
}

// EventsOptions turn cloud change events into targeted passes of the node
// sync and metadata controllers. With no source (and no Hub) events are
// off and the controllers poll at their configured intervals.
type EventsOptions struct {
	// Sources build the event sources; each runs in the manager and
	// publishes to the hub, whose health is theirs together.
	Sources []EventSource
	// Capacity bounds the hub's queue, in changes
	// (cloudchange.DefaultCapacity when 0).
	Capacity int
	// ResyncInterval is how often the controllers poll while every source
	// is up (--events-resync-interval; cloudchange.DefaultResyncInterval when
	// 0).
	ResyncInterval time.Duration
	// SilentAfter is how long an echo of an own write, or the event of a
	// change a full pass found, may take before a cloud's events count as
	// silent (--events-silent-after; cloudchange.DefaultSilentAfter when 0,
	// never when negative).
	SilentAfter time.Duration
	// Hub, when set, is used instead of building one (tests publish to it
	// directly).
	Hub *cloudchange.Hub
	// AdvertiseAddress is the host:port at which the other replicas reach
	// this one's Event Grid webhook (its Pod IP and the webhook's port).
	// With leader election on, the leader writes it on its Lease
	// (WebhookAddressAnnotation) and followers forward the deliveries they
	// receive there; empty, a follower answers them 503 and Event Grid
	// retries (10 s or more later).
	AdvertiseAddress string
	// PeerTokenFile holds this replica's service account token for
	// PeerAudience, bound to its Pod (a projected volume): a follower
	// forwards a delivery only with it, in place of the caller's
	// credential, and only to the Pod the Lease names at that Pod's IP,
	// whose answer must carry that Pod's token. Empty: no forwarding.
	PeerTokenFile string
	// Heartbeat are resources (Azure IDs, AWS ARNs of EC2 resources) on
	// which the leader writes HeartbeatTag every HeartbeatInterval
	// (DefaultHeartbeatInterval when 0), so that a stream whose events
	// stop is judged silent even when nothing else changes. Empty: none.
	Heartbeat         []string
	HeartbeatInterval time.Duration
}

// on reports whether events are on.
func (o EventsOptions) on() bool { return o.Hub != nil || len(o.Sources) > 0 }

// ownWrites is the record of the controllers' cloud writes whose echoes
// the hub keeps from their writers: the given hub's, else a new one for
// the hub eventHub builds; nil when events are off.
func (o EventsOptions) ownWrites() *cloud.OwnWrites {
	switch {
	case o.Hub != nil:
		return o.Hub.OwnWrites()
	case o.on():
		return cloud.NewOwnWrites(0)
	}
	return nil
}

// eventHub builds the hub and its sources and adds them to mgr; nil when
// events are off. own tells the hub which controller made which write;
// peers, when not nil, tell a follower's sources where the verified leader
// is; handover, when not nil, carries unfinished changes from one leader to
// the next.
func (o EventsOptions) eventHub(mgr ctrl.Manager, own *cloud.OwnWrites, peers *peers, handover cloudchange.Handover) (*cloudchange.Hub, error) {
	if !o.on() {
		return nil, nil
	}
	hub := o.Hub
	if hub == nil {
		hub = cloudchange.NewHub(cloudchange.HubOptions{Capacity: o.Capacity, ResyncInterval: o.ResyncInterval, OwnWrites: own,
			SilentAfter: o.SilentAfter, Handover: handover, Log: ctrl.Log.WithName("events")})
	}
	if err := mgr.Add(hub); err != nil {
		return nil, err
	}
	for _, build := range o.Sources {
		s, err := build(hub)
		if err != nil {
			return nil, fmt.Errorf("setting up an event source: %w", err)
		}
		if l, ok := s.(leaderAware); ok {
			l.AwaitLeader(mgr.Elected())
		}
		if f, ok := s.(leaderFollower); ok && peers != nil {
			f.FollowLeader(peers)
		}
		hub.AddSource(s)
		if err := mgr.Add(s); err != nil {
			return nil, err
		}
		if l, ok := s.(listener); ok {
			if err := mgr.AddReadyzCheck(s.Name()+"-listening", listening(l)); err != nil {
				return nil, err
			}
		}
	}
	return hub, nil
}

// listener is a source that serves deliveries at an address (the Event
// Grid webhook); Addr is "" until it listens.
type listener interface {
	Addr() string
}

// listening is a readiness check that fails until l listens: the Service
// must not send deliveries to a replica that cannot take them yet (the
// webhook starts once the caches have synced).
func listening(l listener) healthz.Checker {
	return func(*http.Request) error {
		if l.Addr() == "" {
			return errors.New("the event webhook does not listen yet")
		}
		return nil
	}
}

// leaderAware is a source that serves on every replica but publishes only
// once this replica leads (the Event Grid webhook: deliveries reach any
// replica behind the Service).
type leaderAware interface {
	AwaitLeader(elected <-chan struct{})
}

// leaderFollower is a source that hands what a follower receives to the
// leader (the Event Grid webhook forwards deliveries), given the replicas'
// proofs of one another.
type leaderFollower interface {
	FollowLeader(peers eventgrid.Peers)
}
