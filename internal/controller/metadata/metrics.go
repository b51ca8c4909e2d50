package metadata

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	tagmetrics "github.com/tagsync/tagsync/internal/metrics"
	"github.com/tagsync/tagsync/internal/tags"
)

const metrics = tagmetrics.Subsystem(ControllerName)

// Resource states of the resources gauge.
var resourceStates = []string{"matched", "in_sync", "failed"}

var (
	mutationsTotal = metrics.Counter("mutations_total",
		"Cloud tag mutations by cloud, operation (set, delete) and result (ok, error); one per resource and operation.", "cloud", "op", "result")
	resourcesGauge = metrics.Gauge("resources",
		"Resources by CloudMetadata, cloud and state (matched, in_sync, failed) after the last pass.", "namespace", "cloudmetadata", "cloud", "state")
	syncDuration = metrics.Histogram("sync_duration_seconds",
		"Duration of one pass over one cloud's classified resources (discovery, planning, writes).", 0.01, 16, "cloud")
	passesTotal = metrics.Counter("passes_total",
		"Passes by cloud and result (ok: every resource in sync; partial; error: the request could not be carried out).", "cloud", "result")
	targetedPassesTotal = metrics.Counter("targeted_passes_total",
		"Passes over the resources cloud changes named (events), by CloudMetadata and result (ok, error).", "namespace", "cloudmetadata", "result")
	targetedFallbacksTotal = metrics.Counter("targeted_fallbacks_total",
		"Targeted passes that gave way to a full pass because reading the changed resources one by one would cost more requests than the last full pass's discovery, by CloudMetadata.", "namespace", "cloudmetadata")
	freshenedTotal = metrics.Counter("freshened_total",
		"Changed resources a full pass took as their changes left them because its discovery did not find them yet (the search index lags the writes), by CloudMetadata.", "namespace", "cloudmetadata")
	deletionsHeldTotal = metrics.Counter("deletions_held_total",
		"Tag deletions passes held back, by CloudMetadata and reason (MassDeletion: waiting for approval; Retained: kept by deletionPolicy Retain); a deletion held by several passes counts once per pass.", "namespace", "cloudmetadata", "reason")
	probeOverflowsTotal = metrics.Counter("probe_overflows_total",
		"Changes of resources no CloudMetadata matched that were not read because the queue of such reads was full (events.queueSize): the objects searching the resource's scope ran a full pass instead.")
	probeQueueLength = metrics.Gauge("probe_queue_length",
		"Changes of resources no CloudMetadata matched waiting for the read that tells whether they are classified now.")
	failingGauge = metrics.Gauge("failing",
		"1 while a CloudMetadata's last pass on a cloud could not carry out its request (result error: a refused read, an invalid or unresolvable request), 0 since one did; set by every pass, the first included.",
		"namespace", "cloudmetadata", "cloud")
	fightsGauge = metrics.Gauge("fights",
		"Resources on which a CloudMetadata's request stopped putting a tag back because another writer keeps taking it away (failure reason Fighting), after its last full pass on a cloud.",
		"namespace", "cloudmetadata", "cloud")
	lastSuccessGauge = metrics.Gauge("last_success_timestamp_seconds",
		"When the CloudMetadata's last pass over a cloud with result ok ended (Unix seconds), by CloudMetadata and cloud.", "namespace", "cloudmetadata", "cloud")
)

// countMutation counts one resource's write, per operation it contained.
func countMutation(cloud string, patch tags.Patch, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	if len(patch.Set) > 0 {
		mutationsTotal.WithLabelValues(cloud, "set", result).Inc()
	}
	if len(patch.Delete) > 0 {
		mutationsTotal.WithLabelValues(cloud, "delete", result).Inc()
	}
}

// observe records a target's pass in the metrics.
func (o *outcome) observe(p *pass) {
	if o.started.IsZero() {
		return
	}
	syncDuration.WithLabelValues(o.t.cloud).Observe(time.Since(o.started).Seconds())
	result := "ok"
	switch {
	case o.invalid != nil || o.request != nil:
		result = "error"
	case o.failed() > 0:
		result = "partial"
	}
	passesTotal.WithLabelValues(o.t.cloud, result).Inc()
	failing := 0.0
	if result == "error" {
		failing = 1
	}
	failingGauge.WithLabelValues(p.cm.Namespace, p.cm.Name, o.t.cloud).Set(failing)
	fights := 0
	for _, f := range o.failures {
		if f.Reason == ReasonFighting {
			fights++
		}
	}
	fightsGauge.WithLabelValues(p.cm.Namespace, p.cm.Name, o.t.cloud).Set(float64(fights))
	if result == "ok" {
		lastSuccessGauge.WithLabelValues(p.cm.Namespace, p.cm.Name, o.t.cloud).SetToCurrentTime()
	}
	counts := map[string]int{"matched": o.matched, "in_sync": o.inSync, "failed": o.failed()}
	for _, s := range resourceStates {
		resourcesGauge.WithLabelValues(p.cm.Namespace, p.cm.Name, o.t.cloud, s).Set(float64(counts[s]))
	}
}

// forgetMetrics drops a deleted CloudMetadata's gauges.
func forgetMetrics(key types.NamespacedName) {
	resourcesGauge.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "cloudmetadata": key.Name})
	deletionsHeldTotal.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "cloudmetadata": key.Name})
	lastSuccessGauge.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "cloudmetadata": key.Name})
	failingGauge.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "cloudmetadata": key.Name})
	fightsGauge.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "cloudmetadata": key.Name})
}
