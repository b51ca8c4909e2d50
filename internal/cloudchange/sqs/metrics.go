package sqs

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names of the source. Its SQS requests are counted besides with
// the AWS provider's, in tagsync_cloud_requests_total{provider="aws",
// operation="sqs:ReceiveMessage"} and the like.
const (
	MetricReceived     = "tagsync_events_sqs_messages_received_total"
	MetricDeleted      = "tagsync_events_sqs_messages_deleted_total"
	MetricIgnored      = "tagsync_events_sqs_messages_ignored_total"
	MetricFailed       = "tagsync_events_sqs_messages_failed_total"
	MetricPoison       = "tagsync_events_sqs_messages_poison_total"
	MetricReceiveError = "tagsync_events_sqs_receive_errors_total"
	MetricDeleteError  = "tagsync_events_sqs_delete_errors_total"
	MetricExtended     = "tagsync_events_sqs_visibility_extensions_total"
	MetricExtendError  = "tagsync_events_sqs_visibility_extension_errors_total"
	MetricHoldExpired  = "tagsync_events_sqs_messages_hold_expired_total"
	MetricReReceived   = "tagsync_events_sqs_messages_received_in_flight_total"
	MetricInFlight     = "tagsync_events_sqs_messages_in_flight"
	MetricUp           = "tagsync_events_sqs_up"
	MetricCalls        = "tagsync_events_sqs_tag_calls_total"
	MetricRemovals     = "tagsync_events_sqs_removals_total"
)

// The writers of MetricRemovals.
const (
	writerPerson  = "person"
	writerOther   = "other"
	writerUnknown = "unknown"
)

// The reasons of MetricPoison.
const (
	poisonUnparseable  = "unparseable"
	poisonReceiveCount = "receive_count"
)

// metrics are the source's collectors.
type metrics struct {
	received, deleted, ignored, failed, deleteErrors prometheus.Counter
	extended, extendErrors, holdExpired, rereceived  prometheus.Counter
	calls                                            prometheus.Counter
	poison, receiveErrors, removals                  *prometheus.CounterVec
	inFlight, up                                     prometheus.Gauge
}

// newMetrics creates the collectors and registers them on reg (nil: not
// registered). A registry takes one source's.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &metrics{
		received: counter(MetricReceived, "SQS messages received, redeliveries included."),
		deleted:  counter(MetricDeleted, "SQS messages deleted: their changes' passes completed, or tagsync does not read their event."),
		ignored:  counter(MetricIgnored, "SQS messages holding an EventBridge event tagsync does not read (acknowledged and deleted)."),
		failed:   counter(MetricFailed, "SQS messages whose passes failed: left on the queue, received again after its visibility timeout."),
		deleteErrors: counter(MetricDeleteError,
			"SQS messages whose delete failed (they are received again)."),
		extended: counter(MetricExtended,
			"Visibility timeout extensions of SQS messages whose passes were still running (one per message and heartbeat)."),
		extendErrors: counter(MetricExtendError,
			"Failed visibility timeout extensions of SQS messages whose passes were running (they may be received again meanwhile)."),
		holdExpired: counter(MetricHoldExpired,
			"SQS messages whose passes outlasted the longest hold: no longer kept hidden, received again."),
		rereceived: counter(MetricReReceived,
			"SQS messages received again while the passes of their first receive still ran: not published again, deleted when those passes succeed."),
		poison: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPoison,
			Help: "SQS messages that cannot be read (reason unparseable) or were received too often (reason receive_count); the queue's redrive policy moves them to its dead-letter queue."},
			[]string{"reason"}),
		receiveErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricReceiveError,
			Help: "Failed SQS receives (and queue attribute reads), by reason: queue_gone, access_denied, credentials, unreachable, throttled, other."},
			[]string{"reason"}),
		calls: counter(MetricCalls,
			"CloudTrail events of tag writes (AWS API Call via CloudTrail: CreateTags, DeleteTags, CreateOrUpdateTags, AddTags, RemoveTags, TagResources, UntagResources) read for who made a tag change; acknowledged, never a pass of their own."),
		removals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRemovals,
			Help: "Tag changes that removed tags, published by who the CloudTrail event of their call says removed them: person, other (a role, a service, automation), unknown (no CloudTrail event within --events-sqs-attribution-wait)."},
			[]string{"writer"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricInFlight,
			Help: "SQS messages received and not yet done."}),
		up: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricUp,
			Help: "1 while the SQS event source receives, 0 while it is down."}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.received, m.deleted, m.ignored, m.failed, m.deleteErrors, m.extended,
		m.extendErrors, m.holdExpired, m.rereceived, m.poison, m.receiveErrors, m.inFlight, m.up, m.calls, m.removals} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("sqs: register metrics: %w", err)
		}
	}
	return m, nil
}
