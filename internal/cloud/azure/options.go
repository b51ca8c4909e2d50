package azure

import (
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tagsync/tagsync/internal/cloud"
)

// WriteMethod chooses how PatchTags writes.
type WriteMethod string

// The write methods.
const (
	// WriteTagsAPI patches the Tags API at the resource's scope (Merge for
	// set keys, Delete for deleted keys). It needs only
	// Microsoft.Resources/tags/write (built-in role Tag Contributor). The
	// default.
	WriteTagsAPI WriteMethod = "TagsAPI"
	// WriteResourcePatch PATCHes the VM or scale set with its full new tag
	// map and If-Match: the ETag of a fresh read, re-reading on 412. It needs
	// write access to the resource. Other resource types use the Tags API.
	WriteResourcePatch WriteMethod = "ResourcePatch"
)

// Defaults of Options.
const (
	DefaultCacheTTL = 20 * time.Second
	// DefaultReadsPerSecond and DefaultReadBurst are the conservative read
	// budget per subscription: the whole budget until ARM reports its
	// remaining reads, and the fallback while ARM reports fewer than the
	// reserve (see RateLimit).
	DefaultReadsPerSecond = 10
	DefaultReadBurst      = 50
	// DefaultWritesPerSecond and DefaultWriteBurst are the conservative
	// write (and delete) budget per subscription, as the reads'.
	DefaultWritesPerSecond = 4
	DefaultWriteBurst      = 20
	DefaultMaxRetries      = 3
	DefaultRetryDelay      = time.Second
	DefaultMaxRetryDelay   = 60 * time.Second
	DefaultPollFrequency   = 2 * time.Second
	// DefaultWriteConcurrency is how many resources WriteTags writes at once.
	DefaultWriteConcurrency = 8
	// MaxWriteAttempts bounds ResourcePatch's read-modify-write attempts.
	MaxWriteAttempts = 5
)

// RateLimit is the client-side request budget, per subscription the
// provider talks to and per ARM throttling bucket (reads: GET, HEAD;
// deletes: DELETE; writes: everything else), as ARM keeps its buckets per
// subscription. It applies to every HTTP attempt, retries and LRO polls
// included.
//
// The budget follows the quota ARM reports left on every answer
// (x-ms-ratelimit-remaining-subscription-reads, -writes, -deletes): it
// spends ARM's bucket down to a reserve of 10% (at least one token) that it
// leaves to the subscription's other clients, and then paces at ARM's
// documented refill less 5% (reads 23.75/s, writes and deletes 9.5/s).
// Until ARM has reported a bucket's level, and while ARM reports less than
// the reserve (another client is spending the quota), it falls back to the
// conservative budget: reads 10/s burst 50, writes 4/s burst 20
// (DefaultReadsPerSecond and friends), or the fields below where set. A
// field that is set also caps the budget when it follows ARM: a rate caps
// the pace, a burst how many requests may leave at once. Requests outside
// any subscription and Resource Graph queries use the conservative write
// budget only. The package documentation explains why the budget cannot
// cause a 429 in a subscription it is the only client of.
type RateLimit struct {
	// ReadsPerSecond is the conservative read rate and caps the adaptive
	// one; 0 means DefaultReadsPerSecond (and ARM's 25/s less 5% when
	// following ARM).
	ReadsPerSecond float64 `json:"readsPerSecond,omitempty"`
	// ReadBurst is the conservative read burst and caps the adaptive one;
	// 0 means DefaultReadBurst (and ARM's bucket less the reserve when
	// following ARM).
	ReadBurst int `json:"readBurst,omitempty"`
	// WritesPerSecond is the conservative write and delete rate and caps
	// the adaptive one; 0 means DefaultWritesPerSecond (and ARM's 10/s
	// less 5% when following ARM).
	WritesPerSecond float64 `json:"writesPerSecond,omitempty"`
	// WriteBurst is the conservative write and delete burst and caps the
	// adaptive one; 0 means DefaultWriteBurst (and ARM's bucket less the
	// reserve when following ARM).
	WriteBurst int `json:"writeBurst,omitempty"`
	// Disabled turns the budget off.
	Disabled bool `json:"disabled,omitempty"`
}

// Retry tunes azcore's retry policy, which retries 408, 429, 500, 502, 503
// and 504 and honours Retry-After (giving up when it exceeds MaxRetryDelay).
type Retry struct {
	// MaxRetries is the number of retries; 0 means DefaultMaxRetries,
	// negative means none.
	MaxRetries int32 `json:"maxRetries,omitempty"`
	// RetryDelay is the base of the exponential back-off.
	RetryDelay time.Duration `json:"retryDelay,omitempty"`
	// MaxRetryDelay caps a back-off and the Retry-After the client accepts.
	MaxRetryDelay time.Duration `json:"maxRetryDelay,omitempty"`
}

// Options tune a Provider; NewProvider's Option functions set them.
type Options struct {
	// Credential overrides Config.Auth (e.g. a test's credential).
	Credential azcore.TokenCredential
	// Registerer receives the provider's metrics (controller-runtime's
	// metrics.Registry in the manager, a fresh registry in tests); nil
	// registers nothing (Calls still counts).
	Registerer prometheus.Registerer
	// CacheTTL is how long a resource group's listing serves Snapshots;
	// 0 means DefaultCacheTTL, negative disables the cache.
	CacheTTL time.Duration
	// WriteMethod chooses how PatchTags writes; empty means WriteTagsAPI.
	WriteMethod WriteMethod
	// RateLimit is the client-side request budget.
	RateLimit RateLimit
	// Retry tunes retries.
	Retry Retry
	// PollFrequency is the LRO poll interval when ARM sends no Retry-After;
	// 0 means DefaultPollFrequency (azcore refuses less than 1s outside
	// tests).
	PollFrequency time.Duration
	// Gates hold calls ARM asked to wait (see ThrottleGates); nil means
	// DefaultThrottleGates, shared by the whole process.
	Gates *ThrottleGates
	// WriteConcurrency is how many resources WriteTags writes at once;
	// 0 means DefaultWriteConcurrency.
	WriteConcurrency int
	// OwnWrites, when set, records every write a controller makes (its
	// context names it: cloud.WithWriter) by the correlation ID the write
	// carries, so that its change event does not wake that controller.
	OwnWrites *cloud.OwnWrites
	// providerLimits replace the published provider limits the pace
	// follows (tests).
	providerLimits map[string][2]providerLimit
}

// Option sets an Option of NewProvider.
type Option func(*Options)

// WithCredential uses cred instead of building one from Config.Auth.
func WithCredential(cred azcore.TokenCredential) Option {
	return func(o *Options) { o.Credential = cred }
}

// WithRegisterer registers the provider's metrics on r.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(o *Options) { o.Registerer = r }
}

// WithCacheTTL sets how long listings are reused (negative: never).
func WithCacheTTL(d time.Duration) Option { return func(o *Options) { o.CacheTTL = d } }

// WithWriteMethod chooses how PatchTags writes.
func WithWriteMethod(m WriteMethod) Option { return func(o *Options) { o.WriteMethod = m } }

// WithRateLimit sets the client-side request budget.
func WithRateLimit(r RateLimit) Option { return func(o *Options) { o.RateLimit = r } }

// WithRetry tunes retries.
func WithRetry(r Retry) Option { return func(o *Options) { o.Retry = r } }

// WithPollFrequency sets the LRO poll interval used without Retry-After.
func WithPollFrequency(d time.Duration) Option { return func(o *Options) { o.PollFrequency = d } }

// WithThrottleGates gives the provider its own throttle gates instead of
// the process-wide ones (e.g. another principal on the same subscriptions).
func WithThrottleGates(g *ThrottleGates) Option { return func(o *Options) { o.Gates = g } }

// WithOwnWrites sets Options.OwnWrites.
func WithOwnWrites(w *cloud.OwnWrites) Option { return func(o *Options) { o.OwnWrites = w } }

// WithWriteConcurrency sets how many resources WriteTags writes at once.
func WithWriteConcurrency(n int) Option { return func(o *Options) { o.WriteConcurrency = n } }

// withDefaults fills zero options with their defaults.
func (o Options) withDefaults() Options {
	if o.CacheTTL == 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	if o.WriteMethod == "" {
		o.WriteMethod = WriteTagsAPI
	}
	// RateLimit keeps its zero fields: the budget tells a field set (a cap)
	// from one left to the defaults (see RateLimit).
	if o.Retry.MaxRetries == 0 {
		o.Retry.MaxRetries = DefaultMaxRetries
	}
	if o.Retry.RetryDelay <= 0 {
		o.Retry.RetryDelay = DefaultRetryDelay
	}
	if o.Retry.MaxRetryDelay <= 0 {
		o.Retry.MaxRetryDelay = DefaultMaxRetryDelay
	}
	if o.PollFrequency <= 0 {
		o.PollFrequency = DefaultPollFrequency
	}
	if o.Gates == nil {
		o.Gates = DefaultThrottleGates()
	}
	if o.WriteConcurrency <= 0 {
		o.WriteConcurrency = DefaultWriteConcurrency
	}
	return o
}
