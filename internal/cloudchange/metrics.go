package cloudchange

import tagmetrics "github.com/tagsync/tagsync/internal/metrics"

// The hub's metrics, tagsync_events_*.
var (
	metrics       = tagmetrics.Subsystem("events")
	receivedTotal = metrics.Counter("changes_received_total",
		"Changes the sources published, by source.", "source")
	duplicatesTotal = metrics.Counter("changes_duplicate_total",
		"Changes dropped because a change with the same ID was received recently, by source.", "source")
	echoesTotal = metrics.Counter("changes_own_write_total",
		"Changes one of the controller's objects caused with its own write, routed to the controller's other objects only, by source and controller.", "source", "controller")
	overflowsTotal = metrics.Counter("overflows_total",
		"Deliveries refused because the queue was full (their source delivers them again); each makes every controller run one full pass meanwhile.")
	handedOverTotal = metrics.Counter("handed_over_total",
		"Changes handed from one leader to the next: left (acknowledged but not finished when this leader stopped) and taken (left by the previous leader, published at the start of leading).", "direction")
	queueLength = metrics.Gauge("queue_length", "Changes waiting in the hub's queue.")
	passLatency = metrics.Histogram("change_to_pass_seconds",
		"Time from a change (when the cloud made it, else when it was received) to the end of the pass it triggered, by source.",
		0.05, 14, "source")
	sourceUp    = metrics.Gauge("source_up", "1 while an event source delivers, 0 while it is down.", "source")
	silentGauge = metrics.Gauge("silent",
		"Event streams (Azure subscriptions, AWS accounts' regions) whose events look silent though the sources are up (own writes not echoed, or changes no event announced), by cloud; a stream counts until it delivers again.", "cloud")
	silencesTotal = metrics.Counter("silences_total",
		"Times a cloud's events were found silent, by cloud and reason (echo_overdue, unannounced_change).", "cloud", "reason")
	unannouncedTotal = metrics.Counter("unannounced_changes_total",
		"Changes full passes found that no event announced within the silence bound, by cloud.", "cloud")
)
