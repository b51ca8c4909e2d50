package labelsync

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const (
	metricsNamespace = "tagsync"
	metricsSubsystem = "labelsync"
)

// Host states of the hosts gauge.
var hostStates = []string{"matched", "in_sync", "paused", "waiting"}

var (
	passesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "passes_total",
		Help: "Passes by source kind (LabelSyncProfile, Metal3Cluster) and result (ok; partial: some hosts could not be synced; error; invalid: the source's configuration is refused).",
	}, []string{"kind", "result"})
	passDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "pass_duration_seconds",
		Help:    "Duration of one pass over a source's hosts.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"kind"})
	hostsGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "hosts",
		Help: "Hosts by source and state (matched, in_sync, paused, waiting) after the source's last pass.",
	}, []string{"kind", "namespace", "name", "state"})
	nodeWritesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "node_writes_total",
		Help: "Node patches by result (ok, error, conflict).",
	}, []string{"result"})
	labelChangesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "label_changes_total",
		Help: "Node label keys written, by operation (set, delete).",
	}, []string{"op"})
	unreachableClusters = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "unreachable_clusters",
		Help: "Workload clusters that could not be reached by the last pass that used them.",
	})
)

func init() {
	crmetrics.Registry.MustRegister(passesTotal, passDuration, hostsGauge, nodeWritesTotal, labelChangesTotal, unreachableClusters)
}

// observe records a pass in the metrics.
func (p *pass) observe() {
	kind := p.src.kind()
	passDuration.WithLabelValues(kind).Observe(time.Since(p.started).Seconds())
	result := "ok"
	if len(p.out.problems) > 0 {
		result = "partial"
	}
	passesTotal.WithLabelValues(kind, result).Inc()
	counts := map[string]int{"matched": p.out.matched, "in_sync": p.out.inSync, "paused": p.out.paused, "waiting": p.waitingCount()}
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
}
