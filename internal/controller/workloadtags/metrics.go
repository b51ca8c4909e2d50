package workloadtags

import (
	tagmetrics "github.com/tagsync/tagsync/internal/metrics"
	"github.com/tagsync/tagsync/internal/tags"
)

const metrics = tagmetrics.Subsystem(ControllerName)

// resourceStates are the states of the resources gauge.
var resourceStates = []string{"found", "in_sync", "pending", "shared", "failed"}

var (
	resourcesGauge = metrics.Gauge("resources",
		"Cloud resources of a WorkloadTagPolicy's workloads by state (found, in_sync, pending: not in the cloud yet, shared: not tagged per workload, failed) after its last pass.",
		"policy", "state")
	mutationsTotal = metrics.Counter("mutations_total",
		"Cloud tag writes by cloud and result (ok, error); one per resource.", "cloud", "result")
	passesTotal = metrics.Counter("passes_total",
		"Passes by result (ok: every resource in sync; partial; error: the policy could not be applied).", "result")
	readCallsTotal = metrics.Counter("read_calls_total",
		"Cloud requests the passes' bulk reads sent, by cloud.", "cloud")
	fightsGauge = metrics.Gauge("fights",
		"Keys a WorkloadTagPolicy stopped putting back on a resource because another writer keeps changing or removing them, after its last pass.",
		"policy")
)

// countMutation counts one resource's write.
func countMutation(cloud string, patch tags.Patch, err error) {
	if patch.IsEmpty() {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	mutationsTotal.WithLabelValues(cloud, result).Inc()
}

// forgetMetrics drops a deleted policy's series.
func forgetMetrics(policy string) {
	for _, s := range resourceStates {
		resourcesGauge.DeleteLabelValues(policy, s)
	}
	fightsGauge.DeleteLabelValues(policy)
}
