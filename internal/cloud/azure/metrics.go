package azure

import (
	"errors"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/prometheus/client_golang/prometheus"
)

// providerName is the provider label of the metrics and Provider.Name.
const providerName = "azure"

// Metric names. They are shared by all cloud providers (label provider).
const (
	MetricRequests        = "tagsync_cloud_requests_total"
	MetricRequestDuration = "tagsync_cloud_request_duration_seconds"
	MetricThrottled       = "tagsync_cloud_throttled_total"
	MetricHeld            = "tagsync_cloud_requests_held_total"
)

// metrics counts every HTTP request the provider sends, retries and LRO
// polls included, in Prometheus and in a local map (Provider.Calls), and
// the attempts a closed throttle gate held back (never sent).
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
			Help: "HTTP requests sent to the cloud API, including retries and long-running-operation polls, by operation and status code.",
		}, []string{"provider", "operation", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricRequestDuration,
			Help:    "Duration of cloud API HTTP requests, by operation.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, []string{"provider", "operation"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricThrottled,
			Help: "Cloud API requests answered 429 Too Many Requests, by operation.",
		}, []string{"provider", "operation"}),
		holds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricHeld,
			Help: "Cloud API requests not sent because the cloud's last answer for their subscription and bucket (reads or writes) asked to wait (Retry-After), by operation and bucket.",
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

// observe records one request.
func (m *metrics) observe(op string, status int, err error, d time.Duration) {
	code := "error"
	if err == nil {
		code = strconv.Itoa(status)
	}
	m.requests.WithLabelValues(providerName, op, code).Inc()
	m.duration.WithLabelValues(providerName, op).Observe(d.Seconds())
	if status == http.StatusTooManyRequests {
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

// metricsPolicy is a per-retry pipeline policy that counts every attempt.
type metricsPolicy struct{ m *metrics }

// Do implements policy.Policy.
func (p metricsPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	op := operationName(raw.Method, raw.URL.Path)
	start := time.Now()
	resp, err := req.Next()
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	p.m.observe(op, status, err, time.Since(start))
	return resp, err
}

// computeTypes names the compute collections by their lower-cased type path
// after providers/Microsoft.Compute.
var computeTypes = map[string]string{
	"virtualmachines":                         "VirtualMachines",
	"virtualmachinescalesets":                 "VirtualMachineScaleSets",
	"virtualmachinescalesets/virtualmachines": "VirtualMachineScaleSetVMs",
}

// itemVerbs names single-resource operations by HTTP method.
var itemVerbs = map[string]string{
	http.MethodGet: "Get", http.MethodHead: "Get", http.MethodPatch: "Update",
	http.MethodPut: "CreateOrUpdate", http.MethodDelete: "Delete", http.MethodPost: "Action",
}

// tagsVerbs names Tags API operations at a scope.
var tagsVerbs = map[string]string{
	http.MethodGet: "Tags.GetAtScope", http.MethodPut: "Tags.CreateOrUpdateAtScope",
	http.MethodPatch: "Tags.UpdateAtScope", http.MethodDelete: "Tags.DeleteAtScope",
}

// operationName derives a low-cardinality operation name, in the SDK's
// Client.Method style, from a request's method and path: never a resource
// name. Examples: "VirtualMachineScaleSets.List", "Tags.UpdateAtScope",
// "LRO.Poll".
func operationName(method, path string) string {
	segs := strings.Split(strings.ToLower(strings.Trim(path, "/")), "/")
	n := len(segs)
	if n >= 4 && strings.Join(segs[n-4:], "/") == "providers/microsoft.resources/tags/default" {
		if v, ok := tagsVerbs[method]; ok {
			return v
		}
	}
	prov := -1
	for i, s := range segs {
		switch s {
		case "operations", "operationresults", "operationstatuses", "asyncoperations":
			if prov >= 0 && method == http.MethodGet {
				return "LRO.Poll"
			}
		case "providers":
			prov = i
		}
	}
	if prov < 0 {
		return armBaseOperation(method, segs)
	}
	return providerOperation(method, segs, prov)
}

// armBaseOperation names requests outside a resource provider.
func armBaseOperation(method string, segs []string) string {
	switch {
	case len(segs) == 3 && segs[0] == "subscriptions" && segs[2] == "resources":
		return "Resources.List"
	case len(segs) == 3 && segs[2] == "resourcegroups":
		return "ResourceGroups.List"
	case len(segs) == 4 && segs[2] == "resourcegroups":
		return "ResourceGroups." + itemVerb(method)
	case len(segs) == 5 && segs[4] == "resources":
		return "Resources.ListByResourceGroup"
	}
	return "ARM." + method
}

// providerOperation names requests under providers/{namespace}/...
func providerOperation(method string, segs []string, prov int) string {
	if prov+1 >= len(segs) {
		return "ARM." + method
	}
	ns, rest := segs[prov+1], segs[prov+2:]
	if ns == "microsoft.resourcegraph" {
		return "ResourceGraph.Resources"
	}
	// rest alternates type, name, type, name...; an odd length is a list.
	var types []string
	for i := 0; i < len(rest); i += 2 {
		types = append(types, rest[i])
	}
	typ := strings.Join(types, "/")
	name, ok := computeTypes[typ]
	if ns != "microsoft.compute" || !ok {
		name = ns + "/" + typ
	}
	if len(rest)%2 == 1 {
		if method != http.MethodGet {
			return name + "." + itemVerb(method)
		}
		if prov == 2 { // /subscriptions/{s}/providers/...: subscription-wide
			return name + ".ListAll"
		}
		return name + ".List"
	}
	return name + "." + itemVerb(method)
}

// itemVerb names a single-resource operation.
func itemVerb(method string) string {
	if v, ok := itemVerbs[method]; ok {
		return v
	}
	return method
}
