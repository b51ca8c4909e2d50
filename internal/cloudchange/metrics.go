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
		"Deliveries dropped because the queue was full; each makes every controller run one full pass.")
	queueLength = metrics.Gauge("queue_length", "Changes waiting in the hub's queue.")
	passLatency = metrics.Histogram("change_to_pass_seconds",
		"Time from a change (when the cloud made it, else when it was received) to the end of the pass it triggered, by source.",
		0.05, 14, "source")
	sourceUp = metrics.Gauge("source_up", "1 while an event source delivers, 0 while it is down.", "source")
)
