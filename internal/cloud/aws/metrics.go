package aws

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/prometheus/client_golang/prometheus"
)

// providerName is the provider label of the metrics and Provider.Name.
const providerName = "aws"

// Metric names. They are the Azure provider's, shared by every cloud
// provider of a process and told apart by the label provider="aws"; names,
// label names, help texts and buckets are identical, so both providers
// register on one registry and share the collectors.
const (
	MetricRequests        = "tagsync_cloud_requests_total"
	MetricRequestDuration = "tagsync_cloud_request_duration_seconds"
	MetricThrottled       = "tagsync_cloud_throttled_total"
	MetricHeld            = "tagsync_cloud_requests_held_total"
)

// The help texts and label names of the metrics: the Azure provider's word
// for word, as a registry refuses two collectors of one name that differ.
const (
	helpRequests  = "HTTP requests sent to the cloud API, including retries and long-running-operation polls, by operation and status code."
	helpDuration  = "Duration of cloud API HTTP requests, by operation."
	helpThrottled = "Cloud API requests answered 429 Too Many Requests, by operation."
	helpHeld      = "Cloud API requests not sent because the cloud's last answer for their subscription and bucket (reads or writes) asked to wait (Retry-After), by operation and bucket."
)

// Label names of the metrics.
var (
	labelsRequests  = []string{"provider", "operation", "code"}
	labelsDuration  = []string{"provider", "operation"}
	labelsThrottled = []string{"provider", "operation"}
	labelsHeld      = []string{"provider", "operation", "bucket"}
)

// metrics counts every HTTP request the provider sends, SDK retries
// included, in Prometheus and in a local map (Provider.Calls), and the
// attempts a closed throttle gate held back (never sent).
type metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	throttled *prometheus.CounterVec
	holds     *prometheus.CounterVec

	mu    sync.Mutex
	calls map[string]int
}

// newMetrics creates the collectors and registers them on reg (nil: not
// registered). Collectors already registered by another provider are
// reused.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequests,
			Help: helpRequests,
		}, labelsRequests),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricRequestDuration,
			Help:    helpDuration,
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, labelsDuration),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricThrottled,
			Help: helpThrottled,
		}, labelsThrottled),
		holds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricHeld,
			Help: helpHeld,
		}, labelsHeld),
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

// observe records one request: code is the HTTP status, or "error" when no
// answer came.
func (m *metrics) observe(op string, status int, throttled bool, d time.Duration) {
	code := "error"
	if status > 0 {
		code = strconv.Itoa(status)
	}
	m.requests.WithLabelValues(providerName, op, code).Inc()
	m.duration.WithLabelValues(providerName, op).Observe(d.Seconds())
	if throttled {
		m.throttled.WithLabelValues(providerName, op).Inc()
	}
	m.mu.Lock()
	m.calls[op]++
	m.mu.Unlock()
}

// held records one attempt a closed gate did not send.
func (m *metrics) held(op string, bk bucket) {
	m.holds.WithLabelValues(providerName, op, string(bk)).Inc()
}

// snapshot copies the per-operation counts.
func (m *metrics) snapshot() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.calls)
}

// servicePrefixes map SDK service IDs to the prefixes of IAM actions.
var servicePrefixes = map[string]string{
	"EC2":                         "ec2",
	"Resource Groups Tagging API": "tag",
}

// operationName names an SDK operation as its IAM action does:
// "ec2:CreateTags", "tag:GetResources".
func operationName(ctx context.Context) string {
	svc := awsmiddleware.GetServiceID(ctx)
	prefix, ok := servicePrefixes[svc]
	if !ok {
		prefix = strings.ToLower(strings.ReplaceAll(svc, " ", ""))
	}
	return prefix + ":" + awsmiddleware.GetOperationName(ctx)
}

// callCounter counts the requests sent under a context (Discovery.Calls).
type callCounter struct{}

// withCallCounter returns ctx counting its requests into n.
func withCallCounter(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, callCounter{}, n)
}

// metricsMiddleware is the first Deserialize-step middleware: it runs once
// per HTTP attempt (the SDK's retry loop is in the Finalize step, around
// it), sees the raw answer and the deserialized error, and counts the
// attempt.
type metricsMiddleware struct{ m *metrics }

// ID names the middleware in the stack.
func (metricsMiddleware) ID() string { return "TagsyncRequestMetrics" }

// HandleDeserialize sends the request and records it.
func (mw metricsMiddleware) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error,
) {
	start := time.Now()
	out, md, err := next.HandleDeserialize(ctx, in)
	status := 0
	if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp != nil {
		status = resp.StatusCode
	} else if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil {
		status = resp.StatusCode
	}
	mw.m.observe(operationName(ctx), status, isThrottle(err), time.Since(start))
	if n, ok := ctx.Value(callCounter{}).(*atomic.Int64); ok {
		n.Add(1)
	}
	return out, md, err
}
