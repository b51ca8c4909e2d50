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
	passesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "passes_total",
		Help: "Sync passes by NodeTagSync, whether the cloud was read fresh, and result (ok, error).",
	}, []string{"nodetagsync", "fresh", "result"})
	passDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "pass_duration_seconds",
		Help:    "Duration of a sync pass over every in-scope node.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"nodetagsync"})
	nodesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "nodes",
		Help: "Nodes by state after the last pass (synced, unmanaged, error).",
	}, []string{"nodetagsync", "state"})
	conflictsGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "conflicts",
		Help: "Tags currently in conflict between cloud and nodes.",
	}, []string{"nodetagsync"})
	unrepresentableGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "unrepresentable",
		Help: "Tags or labels that cannot be carried to the other side.",
	}, []string{"nodetagsync"})
	writesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "writes_total",
		Help: "Writes by side (cloud, node) and result (ok, error).",
	}, []string{"nodetagsync", "side", "result"})
	wipesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "wipes_total",
		Help: "Wholesale rewrites of a resource's tags detected.",
	}, []string{"nodetagsync"})
)

func init() {
	crmetrics.Registry.MustRegister(passesTotal, passDuration, nodesGauge, conflictsGauge,
		unrepresentableGauge, writesTotal, wipesTotal)
}
