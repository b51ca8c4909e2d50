package nodetags

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const (
	metricsNamespace = "tagsync"
	metricsSubsystem = "nodetags"
)

var (
	passesTotal = counter("passes_total",
		"Sync passes by NodeTagSync, whether the cloud was read fresh, and result (ok, error).", "nodetagsync", "fresh", "result")
	passDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "pass_duration_seconds",
		Help:    "Duration of a sync pass over every in-scope node.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"nodetagsync"})
	nodesGauge = gauge("nodes",
		"Nodes by state after the last pass (synced, unmanaged, error, pending).", "nodetagsync", "state")
	conflictsGauge       = gauge("conflicts", "Tags currently in conflict between cloud and nodes.", "nodetagsync")
	unrepresentableGauge = gauge("unrepresentable", "Tags or labels that cannot be carried to the other side.", "nodetagsync")
	writesTotal          = counter("writes_total", "Writes by side (cloud, node) and result (ok, error).", "nodetagsync", "side", "result")
	wipesTotal           = counter("wipes_total", "Wholesale rewrites of a resource's tags detected.", "nodetagsync")
)

// counter defines a tagsync_nodetags_<name> counter.
func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: name, Help: help}, labels)
}

// gauge defines a tagsync_nodetags_<name> gauge.
func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: name, Help: help}, labels)
}

func init() {
	crmetrics.Registry.MustRegister(passesTotal, passDuration, nodesGauge, conflictsGauge,
		unrepresentableGauge, writesTotal, wipesTotal)
}
