package cloud

import (
	"errors"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names of the requests every cloud provider sends, told apart by the
// label provider.
const (
	MetricRequests        = "tagsync_cloud_requests_total"
	MetricRequestDuration = "tagsync_cloud_request_duration_seconds"
	MetricThrottled       = "tagsync_cloud_throttled_total"
	MetricHeld            = "tagsync_cloud_requests_held_total"
)

// RequestMetrics counts every HTTP request a provider sends, SDK retries and
// long-running-operation polls included, in Prometheus and in a local map
// (Provider.Calls), and the attempts a closed throttle gate held back (never
// sent). The providers of one process share the collectors on a registry.
type RequestMetrics struct {
	provider  string
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	throttled *prometheus.CounterVec
	holds     *prometheus.CounterVec

	mu    sync.Mutex
	calls map[string]int
}

// NewRequestMetrics creates the collectors of provider (its label value) and
// registers them on reg (nil: not registered), reusing those another
// provider registered there before.
func NewRequestMetrics(provider string, reg prometheus.Registerer) (*RequestMetrics, error) {
	m := &RequestMetrics{
		provider: provider,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequests,
			Help: "HTTP requests sent to the cloud API, including retries and long-running-operation polls, by operation and status code.",
		}, []string{"provider", "operation", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricRequestDuration,
			Help:    "Duration of cloud API HTTP requests, by operation.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, []string{"provider", "operation"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricThrottled,
			Help: "Cloud API requests answered 429 Too Many Requests (or the cloud's throttling error), by operation.",
		}, []string{"provider", "operation"}),
		holds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricHeld,
			Help: "Cloud API requests not sent because the cloud's last answer for their scope and bucket (reads or writes) asked to wait (Retry-After), by operation and bucket.",
		}, []string{"provider", "operation", "bucket"}),
		calls: map[string]int{},
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.requests, err = register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	if m.throttled, err = register(reg, m.throttled); err != nil {
		return nil, err
	}
	if m.holds, err = register(reg, m.holds); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the equal collector registered before.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, err
}

// Observe records one request attempt of operation op: status is the HTTP
// status of the answer, 0 when none came (counted as code "error").
func (m *RequestMetrics) Observe(op string, status int, throttled bool, d time.Duration) {
	code := "error"
	if status > 0 {
		code = strconv.Itoa(status)
	}
	m.requests.WithLabelValues(m.provider, op, code).Inc()
	m.duration.WithLabelValues(m.provider, op).Observe(d.Seconds())
	if throttled {
		m.throttled.WithLabelValues(m.provider, op).Inc()
	}
	m.mu.Lock()
	m.calls[op]++
	m.mu.Unlock()
}

// Held records one attempt of op a closed throttle gate of bucket did not
// send.
func (m *RequestMetrics) Held(op, bucket string) {
	m.holds.WithLabelValues(m.provider, op, bucket).Inc()
}

// Calls returns a copy of the attempts per operation so far.
func (m *RequestMetrics) Calls() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.calls)
}
