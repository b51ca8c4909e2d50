package labelsync

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	tagmetrics "github.com/tagsync/tagsync/internal/metrics"
)

const metrics = tagmetrics.Subsystem(ControllerName)

// Host states of the hosts gauge.
var hostStates = []string{"matched", "in_sync", "paused", "waiting", "pending", "write_failed"}

var (
	passesTotal = metrics.Counter("passes_total",
		"Passes by source kind (LabelSyncProfile, Metal3Cluster) and result (ok; partial: some hosts could not be synced; error; invalid: the source's configuration is refused).", "kind", "result")
	passDuration = metrics.Histogram("pass_duration_seconds", "Duration of one pass over a source's hosts.", 0.001, 16, "kind")
	hostsGauge   = metrics.Gauge("hosts",
		"Hosts by source and state (matched, in_sync, paused, waiting; pending: matched hosts whose Node keeps the labelsync.tagsync.io/pending taint because the pass could not write its labels; write_failed: hosts whose Node patch the workload cluster refused) after the source's last pass.", "kind", "namespace", "name", "state")
	lastSuccessGauge = metrics.Gauge("last_success_timestamp_seconds",
		"When the source's last pass with result ok ended (Unix seconds), by source.", "kind", "namespace", "name")
	nodeWritesTotal     = metrics.Counter("node_writes_total", "Node patches by result (ok, error, conflict).", "result")
	labelChangesTotal   = metrics.Counter("label_changes_total", "Node label keys written, by operation (set, delete).", "op")
	unreachableClusters = metrics.Gauge("unreachable_clusters",
		"Workload clusters that could not be reached by the last pass that used them.").WithLabelValues()
)

// observe records a pass in the metrics.
func (p *pass) observe() {
	kind := p.src.kind()
	passDuration.WithLabelValues(kind).Observe(time.Since(p.started).Seconds())
	result := "ok"
	if len(p.out.problems) > 0 {
		result = "partial"
	}
	passesTotal.WithLabelValues(kind, result).Inc()
	if result == "ok" {
		lastSuccessGauge.WithLabelValues(kind, p.src.obj.GetNamespace(), p.src.obj.GetName()).SetToCurrentTime()
	}
	counts := map[string]int{"matched": p.out.matched, "in_sync": p.out.inSync, "paused": p.out.paused, "waiting": p.waitingCount(),
		"pending": p.out.stillTainted, "write_failed": p.out.writeErrors}
	for _, s := range hostStates {
		hostsGauge.WithLabelValues(kind, p.src.obj.GetNamespace(), p.src.obj.GetName(), s).Set(float64(counts[s]))
	}
}

// forgetMetrics drops a deleted source's gauges.
func forgetMetrics(key types.NamespacedName) {
	kind, name := "LabelSyncProfile", key.Name
	if !isProfileRequest(key) {
		kind, name = "Metal3Cluster", key.Name[len(infraRequestPrefix):]
	}
	hostsGauge.DeletePartialMatch(prometheus.Labels{"kind": kind, "namespace": key.Namespace, "name": name})
	lastSuccessGauge.DeleteLabelValues(kind, key.Namespace, name)
}
