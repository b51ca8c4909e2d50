// Package metrics defines tagsync's Prometheus metrics: every metric is
// named tagsync_<subsystem>_<name> and registered with controller-runtime's
// registry, so the manager's metrics endpoint serves it. It is a leaf that
// any package (controllers, event sources, the operator) may import.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Subsystem defines one subsystem's metrics (a controller's, an event
// source's), named tagsync_<subsystem>_<name> (tagsync_<name> for the
// empty subsystem), and registers them with controller-runtime's registry
// (served on the manager's metrics endpoint).
type Subsystem string

// Counter defines and registers a counter.
func (m Subsystem) Counter(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tagsync", Subsystem: string(m), Name: name, Help: help}, labels)
	crmetrics.Registry.MustRegister(c)
	return c
}

// Gauge defines and registers a gauge.
func (m Subsystem) Gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tagsync", Subsystem: string(m), Name: name, Help: help}, labels)
	crmetrics.Registry.MustRegister(g)
	return g
}

// Histogram defines and registers a histogram with exponential buckets
// from start, doubling, count of them.
func (m Subsystem) Histogram(name, help string, start float64, count int, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "tagsync", Subsystem: string(m), Name: name, Help: help,
		Buckets: prometheus.ExponentialBuckets(start, 2, count)}, labels)
	crmetrics.Registry.MustRegister(h)
	return h
}
