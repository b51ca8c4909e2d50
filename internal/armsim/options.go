package armsim

import (
	"cmp"
	"net/http"
	"time"
)

// Defaults used when an Options field is zero.
const (
	// DefaultTenantID is the tenant armsim issues tokens for.
	DefaultTenantID = "72f988bf-0000-4000-8000-00000000a125"
	// DefaultPageSize is the number of items per page of an ARM list.
	DefaultPageSize = 100
	// DefaultGraphPageSize is the Resource Graph page size (ARG's maximum).
	DefaultGraphPageSize = 1000
	// DefaultLRORetryAfter is the polling delay armsim asks LRO clients for.
	DefaultLRORetryAfter = 10 * time.Millisecond
	// DefaultTokenLifetime is the lifetime of the access tokens armsim issues.
	DefaultTokenLifetime = 24 * time.Hour
)

// Options configures a Server. The zero value is usable: HTTP, page size
// 100, LROs that finish at once, ARM's throttling limits, no faults.
type Options struct {
	// TLS serves HTTPS with a certificate signed by a CA armsim generates.
	TLS bool
	// CADir is where the CA certificate (armsim-ca.pem) is written when TLS
	// is on. Empty means a new temporary directory, removed on Close.
	CADir string
	// TenantID is the Entra tenant of issued tokens (DefaultTenantID if empty).
	TenantID string
	// Clock drives throttling, token expiry and timestamps (RealClock if nil).
	Clock Clock
	// PageSize is the number of items per page in ARM lists (DefaultPageSize
	// if zero). Small values exercise nextLink paging.
	PageSize int
	// GraphIndexDelay is how long Resource Graph takes to show a tag
	// change (DefaultGraphIndexDelay if zero; none if negative).
	GraphIndexDelay time.Duration
	// GraphPageSize is the default Resource Graph page size when the request
	// has no $top (DefaultGraphPageSize if zero; at most 1000).
	GraphPageSize int
	// LROPolls is how many status polls a long-running write needs before it
	// reports Succeeded. Zero finishes writes at once (200, no polling).
	LROPolls int
	// LRORetryAfter is the delay announced to LRO pollers in Retry-After /
	// retry-after-ms (DefaultLRORetryAfter if zero).
	LRORetryAfter time.Duration
	// Throttle sets the token buckets. Zero fields take ARM's values.
	Throttle ThrottleOptions
	// Faults are the initial fault settings; change them later with the
	// Server's fault methods.
	Faults FaultOptions
	// ClientSecrets, when non-empty, restricts the token endpoint to these
	// client IDs with these secrets (assertions are accepted for any listed
	// client). Empty accepts any client ID and secret.
	ClientSecrets map[string]string
	// Audiences are the token audiences ARM requests accept in addition to
	// the server's own URL, https://management.azure.com and
	// https://management.core.windows.net.
	Audiences []string
	// TokenLifetime is the lifetime of issued tokens (DefaultTokenLifetime if
	// zero), measured on Clock.
	TokenLifetime time.Duration
	// IdentityHeader is the secret managed-identity clients must send in
	// X-IDENTITY-HEADER (random if empty). See Server.ManagedIdentityEnv.
	IdentityHeader string
	// Seed makes the random error rate reproducible (0 means seed 1).
	Seed int64
	// EventGrid configures the Event Grid event subscriptions' handshakes
	// and deliveries.
	EventGrid EventGridOptions
	// Logf, if set, receives one line per request (method, path, operation,
	// status). Tokens and secrets are never logged.
	Logf func(format string, args ...any)
}

// ThrottleOptions configures ARM's per-subscription token buckets and the
// Resource Graph per-tenant quota.
type ThrottleOptions struct {
	// Disabled turns throttling off (headers are still sent).
	Disabled bool `json:"disabled,omitempty"`
	// Reads is the bucket for GET/HEAD (default capacity 250, refill 25/s).
	Reads Bucket `json:"reads"`
	// Writes is the bucket for PUT/PATCH/POST (default 200, 10/s).
	Writes Bucket `json:"writes"`
	// Deletes is the bucket for DELETE (default 200, 10/s).
	Deletes Bucket `json:"deletes"`
	// Graph is the Resource Graph quota per tenant (default 15 per 5 s).
	Graph Bucket `json:"graph"`
	// ComputeResourceUpdates is Compute's own budget for updates of one
	// VM, scale set or scale-set instance (default 12, refilled 4 a
	// minute), spent after ARM's subscription bucket.
	ComputeResourceUpdates Bucket `json:"computeResourceUpdates"`
	// ComputeSubscriptionUpdates is Compute's budget for the updates of
	// all of a subscription's VMs and scale sets (default 1500, refilled
	// 500 a minute). Compute's read budgets are fixed (computeReads).
	ComputeSubscriptionUpdates Bucket `json:"computeSubscriptionUpdates"`
	// NetworkWrites is Network's budget for a subscription's writes of its
	// resources, Tags API writes at their scope included (default 1000 per
	// 5 minutes: 1000, refilled 10/3 a second).
	NetworkWrites Bucket `json:"networkWrites"`
	// NetworkReads is Network's budget for reads (default 10000 per 5
	// minutes).
	NetworkReads Bucket `json:"networkReads"`
	// PrivateDNSReads is Azure Private DNS's budget for reads of its zones
	// and record sets (default 500 per 5 minutes), spent besides
	// Network's.
	PrivateDNSReads Bucket `json:"privateDNSReads"`
}

// Bucket is a token bucket: Capacity tokens, refilled at RefillPerSecond.
type Bucket struct {
	// Capacity is the maximum and initial number of tokens.
	Capacity float64 `json:"capacity"`
	// RefillPerSecond is how many tokens come back each second.
	RefillPerSecond float64 `json:"refillPerSecond"`
}

// FaultOptions are the random faults applied to every ARM request.
type FaultOptions struct {
	// ErrorRate is the probability (0..1) that a request fails with 500 or
	// 503 before it is handled.
	ErrorRate float64
	// Latency is added to every request (real time, not Clock).
	Latency time.Duration
}

// DefaultRetrySchedule is Event Grid's wait before each retry of a failed
// delivery: 10 s, 30 s, 1 min, 5 min, 10 min, 30 min, 1 h, 3 h, 6 h, then
// every 12 h (until the attempts or the time to live run out).
var DefaultRetrySchedule = []time.Duration{
	10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute, 10 * time.Minute,
	30 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
}

// DefaultWebhookTimeout bounds a handshake and a delivery, as Event Grid
// waits 30 s for a webhook's answer.
const DefaultWebhookTimeout = 30 * time.Second

// EventGridOptions configures event delivery. Delivery runs on real time,
// not Clock.
type EventGridOptions struct {
	// RetrySchedule is the wait before each retry of a failed delivery: the
	// n-th retry waits RetrySchedule[n-1], the last entry repeating
	// (DefaultRetrySchedule if empty). Tests shrink it to milliseconds.
	RetrySchedule []time.Duration
	// HandshakeTimeout bounds the validation handshake
	// (DefaultWebhookTimeout if zero).
	HandshakeTimeout time.Duration
	// DeliveryTimeout bounds one delivery POST (DefaultWebhookTimeout if zero).
	DeliveryTimeout time.Duration
	// Client makes the handshakes and deliveries (a plain http.Client if
	// nil), e.g. an httptest TLS server's Client().
	Client *http.Client
	// Faults are the initial delivery faults; change them later with
	// SetEventGridFaults.
	Faults EventGridFaults
	// DelayAfterFailures is how many failed deliveries in a row make a
	// subscription's endpoint unhealthy (DefaultDelayAfterFailures if
	// zero): then every delivery to it, new events and retries alike,
	// waits DelayedDelivery after the last failure.
	DelayAfterFailures int
	// DelayedDelivery is that wait (DefaultDelayedDelivery if zero).
	DelayedDelivery time.Duration
}

// Event Grid's delayed delivery (Microsoft's "Event Grid message delivery
// and retry", "Delayed delivery"): "if the first 10 events published to an
// endpoint fail, Event Grid assumes that the endpoint is experiencing
// issues and will delay all subsequent retries and new deliveries for
// some time - in some cases up to several hours". armsim delays an hour.
const (
	DefaultDelayAfterFailures = 10
	DefaultDelayedDelivery    = time.Hour
)

// EventGridFaults disturb delivery the ways Event Grid may: at least once,
// in no particular order, late.
type EventGridFaults struct {
	// DuplicateRate is the probability (0..1) that a delivered event is
	// delivered once more (seeded by Options.Seed).
	DuplicateRate float64
	// Reorder delivers the newest due events first instead of the oldest.
	Reorder bool
	// Latency is added before every delivery POST (real time).
	Latency time.Duration
	// Paused holds every delivery (events queue up) until cleared: with
	// it a test queues several events and releases them as one batch.
	Paused bool
}

func (o EventGridOptions) withDefaults() EventGridOptions {
	if len(o.RetrySchedule) == 0 {
		o.RetrySchedule = DefaultRetrySchedule
	}
	o.HandshakeTimeout = cmp.Or(o.HandshakeTimeout, DefaultWebhookTimeout)
	o.DeliveryTimeout = cmp.Or(o.DeliveryTimeout, DefaultWebhookTimeout)
	o.DelayAfterFailures = cmp.Or(o.DelayAfterFailures, DefaultDelayAfterFailures)
	o.DelayedDelivery = cmp.Or(o.DelayedDelivery, DefaultDelayedDelivery)
	return o
}

func (o *Options) withDefaults() Options {
	c := *o
	if c.TenantID == "" {
		c.TenantID = DefaultTenantID
	}
	if c.Clock == nil {
		c.Clock = RealClock{}
	}
	if c.PageSize <= 0 {
		c.PageSize = DefaultPageSize
	}
	switch {
	case c.GraphIndexDelay == 0:
		c.GraphIndexDelay = DefaultGraphIndexDelay
	case c.GraphIndexDelay < 0:
		c.GraphIndexDelay = 0
	}
	if c.GraphPageSize <= 0 || c.GraphPageSize > 1000 {
		c.GraphPageSize = DefaultGraphPageSize
	}
	if c.LRORetryAfter <= 0 {
		c.LRORetryAfter = DefaultLRORetryAfter
	}
	if c.TokenLifetime <= 0 {
		c.TokenLifetime = DefaultTokenLifetime
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	c.Throttle = c.Throttle.withDefaults()
	c.EventGrid = c.EventGrid.withDefaults()
	return c
}

func (t ThrottleOptions) withDefaults() ThrottleOptions {
	t.Reads = t.Reads.or(250, 25)
	t.Writes = t.Writes.or(200, 10)
	t.Deletes = t.Deletes.or(200, 10)
	t.Graph = t.Graph.or(15, 3)
	t.ComputeResourceUpdates = t.ComputeResourceUpdates.or(12, 4.0/60)
	t.ComputeSubscriptionUpdates = t.ComputeSubscriptionUpdates.or(1500, 500.0/60)
	t.NetworkWrites = t.NetworkWrites.or(1000, 1000.0/300)
	t.NetworkReads = t.NetworkReads.or(10000, 10000.0/300)
	t.PrivateDNSReads = t.PrivateDNSReads.or(500, 500.0/300)
	return t
}

func (b Bucket) or(capacity, refill float64) Bucket {
	if b.Capacity <= 0 {
		b.Capacity = capacity
	}
	if b.RefillPerSecond <= 0 {
		b.RefillPerSecond = refill
	}
	return b
}
