package aws

import (
	"cmp"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Options.
const (
	// MaxIDsPerCall is the most resource IDs EC2 accepts in one CreateTags
	// or DeleteTags call.
	MaxIDsPerCall = 1000
	// MaxFilterValues is the most values EC2 accepts in one filter of a
	// Describe call: more fail the whole call with FilterLimitExceeded
	// ("The maximum number of filter values specified on a single call is
	// 200"). The node sync reads instances by the instance-id filter, so
	// it reads at most this many a call.
	MaxFilterValues = 200
	// DefaultMaxIsolationCalls bounds the extra calls WriteTags spends, per
	// failed batch call, to find which of its resources fail (see the
	// package doc): enough to retry past several named missing resources,
	// or to bisect one bad resource out of 1000 (2 calls per halving).
	DefaultMaxIsolationCalls = 24
	// ResourcesPerPage is the page size of Resource Groups Tagging API
	// GetResources calls: its maximum.
	ResourcesPerPage = 100
	// maxTagFilterValues is the most values one GetResources tag filter
	// takes.
	maxTagFilterValues = 20
	// GroupsPerRead is the most Auto Scaling groups one
	// DescribeAutoScalingGroups call names (its limit with MaxRecords 100).
	GroupsPerRead = 100
	// DefaultCacheTTL is how long the node sync's reads of instances and
	// groups serve Snapshots that do not ask for fresh reads.
	DefaultCacheTTL = 20 * time.Second
	// discoverParallelism bounds the regions Discover searches at once.
	discoverParallelism = 4
	// DefaultReadsPerSecond and DefaultReadBurst are the client-side budget
	// of reads (Describe*, Get*, List*) per region: under EC2's
	// non-mutating bucket (100, refilled at 20/s), leaving room for the
	// account's other clients.
	DefaultReadsPerSecond = 15
	DefaultReadBurst      = 50
	// DefaultWritesPerSecond and DefaultWriteBurst are the budget of
	// writes (CreateTags, DeleteTags) per region: under EC2's mutating
	// bucket (200, refilled at 5/s). A write carries up to 1000 resources.
	DefaultWritesPerSecond = 4
	DefaultWriteBurst      = 40
)

// RateLimit is the provider's client-side request budget, per region of
// its account and per kind of request, so that concurrent passes over many
// regions wait here instead of being throttled by AWS first. Zero fields
// take the defaults.
type RateLimit struct {
	ReadsPerSecond  float64
	ReadBurst       int
	WritesPerSecond float64
	WriteBurst      int
	// Disabled turns the budget off (AWS's throttling and the throttle
	// gates still apply).
	Disabled bool
}

// DefaultResourceTypes are the Resource Groups Tagging API resource types
// (service:type as in the resources' ARNs) that Discover searches: EC2
// resources, whose tags EC2 CreateTags and DeleteTags write by resource ID,
// and the Elastic Load Balancing load balancers and target groups a
// cluster's Services and installers create (OpenShift's API load
// balancers, the cloud provider's and the AWS Load Balancer Controller's),
// which WriteTags writes through the Tagging API. moto 5.2.1 serves the
// first sixteen EC2 types and the Application and Network Load Balancers
// and target groups (it files Classic Load Balancers under the type elb,
// where AWS uses elasticloadbalancing:loadbalancer for both); it names
// managed prefix lists, flow logs and spot requests differently from AWS's
// ARNs and not at all the rest.
var DefaultResourceTypes = []string{
	"ec2:instance",
	"ec2:volume",
	"ec2:snapshot",
	"ec2:image",
	"ec2:security-group",
	"ec2:network-interface",
	"ec2:subnet",
	"ec2:vpc",
	"ec2:route-table",
	"ec2:internet-gateway",
	"ec2:natgateway",
	"ec2:vpc-peering-connection",
	"ec2:transit-gateway",
	"ec2:transit-gateway-attachment",
	"ec2:customer-gateway",
	"ec2:vpn-connection",
	"ec2:vpn-gateway",
	"ec2:elastic-ip",
	"ec2:launch-template",
	"ec2:network-acl",
	"ec2:dhcp-options",
	"ec2:vpc-endpoint",
	"ec2:key-pair",
	"ec2:placement-group",
	"ec2:prefix-list",
	"ec2:vpc-flow-log",
	"ec2:spot-instances-request",
	"ec2:dedicated-host",
	"ec2:capacity-reservation",
	"ec2:egress-only-internet-gateway",
	"ec2:transit-gateway-route-table",
	"elasticloadbalancing:loadbalancer",
	"elasticloadbalancing:targetgroup",
}

// Options tune a Provider; NewProvider's Option functions set them.
type Options struct {
	// Registerer receives the provider's metrics (controller-runtime's
	// metrics.Registry in the manager, a fresh registry in tests); nil
	// registers nothing (Calls still counts).
	Registerer prometheus.Registerer
	// HTTPClient carries every AWS request (default: the SDK's).
	HTTPClient sdkaws.HTTPClient
	// RetryMaxAttempts is the SDK's attempts per call, first try
	// included; 0 means the SDK's default (3).
	RetryMaxAttempts int
	// Gates hold calls AWS asked to slow down (see ThrottleGates); nil
	// means DefaultThrottleGates, shared by the whole process.
	Gates *ThrottleGates
	// ResourceTypes are the types Discover searches; nil means
	// DefaultResourceTypes.
	ResourceTypes []string
	// MaxIsolationCalls bounds WriteTags' extra calls per failed batch
	// call; 0 means DefaultMaxIsolationCalls, negative means none (a
	// failed batch fails all its resources).
	MaxIsolationCalls int
	// RateLimit is the client-side budget per region (see RateLimit).
	RateLimit RateLimit
	// CacheTTL is how long Snapshot reuses its reads of an instance or
	// group; 0 means DefaultCacheTTL, negative disables the cache.
	CacheTTL time.Duration
	// Clock is the time of the node sync's read cache and of its grace
	// for new instances; nil means time.Now. Tests step it instead of
	// waiting for a TTL to pass.
	Clock func() time.Time
	// LoadOptions are passed to config.LoadDefaultConfig after the ones
	// built from Config, so they win (e.g. a test's hermetic settings).
	LoadOptions []func(*config.LoadOptions) error

	// maxIDsPerCall overrides MaxIDsPerCall (tests).
	maxIDsPerCall int
	// throttlePatience overrides ThrottlePatience (tests).
	throttlePatience time.Duration
}

// Option sets an Option of NewProvider.
type Option func(*Options)

// WithRegisterer registers the provider's metrics on r.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(o *Options) { o.Registerer = r }
}

// WithHTTPClient sends every AWS request through c (e.g. an *http.Client
// with a proxy or a test transport). The SDK cannot add AWS_CA_BUNDLE's CA
// to a plain *http.Client: NewProvider then fails; give c the CA instead.
func WithHTTPClient(c sdkaws.HTTPClient) Option { return func(o *Options) { o.HTTPClient = c } }

// WithRetryMaxAttempts sets the SDK's attempts per call, first try
// included (1: no retries).
func WithRetryMaxAttempts(n int) Option { return func(o *Options) { o.RetryMaxAttempts = n } }

// WithThrottleGates gives the provider its own throttle gates instead of
// the process-wide ones (e.g. a provider for another AWS account).
func WithThrottleGates(g *ThrottleGates) Option { return func(o *Options) { o.Gates = g } }

// WithResourceTypes sets the resource types Discover searches
// (service:type, e.g. "ec2:instance"); they must be EC2 types for
// WriteTags to write what Discover finds.
func WithResourceTypes(types ...string) Option {
	return func(o *Options) { o.ResourceTypes = append([]string(nil), types...) }
}

// WithMaxIsolationCalls bounds the extra calls WriteTags spends per failed
// batch call to find the resources that fail (negative: none).
func WithMaxIsolationCalls(n int) Option { return func(o *Options) { o.MaxIsolationCalls = n } }

// WithRateLimit sets the client-side request budget per region.
func WithRateLimit(r RateLimit) Option { return func(o *Options) { o.RateLimit = r } }

// WithCacheTTL sets how long Snapshot reuses its reads (negative: never).
func WithCacheTTL(d time.Duration) Option { return func(o *Options) { o.CacheTTL = d } }

// WithClock sets the time the node sync's read cache and new-instance
// grace go by (tests: step it past CacheTTL instead of waiting).
func WithClock(now func() time.Time) Option { return func(o *Options) { o.Clock = now } }

// WithLoadOptions adds options for config.LoadDefaultConfig, applied after
// those built from Config.
func WithLoadOptions(opts ...func(*config.LoadOptions) error) Option {
	return func(o *Options) { o.LoadOptions = append(o.LoadOptions, opts...) }
}

// withDefaults fills zero options with their defaults.
func (o Options) withDefaults() Options {
	if o.Gates == nil {
		o.Gates = DefaultThrottleGates()
	}
	if o.ResourceTypes == nil {
		o.ResourceTypes = DefaultResourceTypes
	}
	if o.MaxIsolationCalls == 0 {
		o.MaxIsolationCalls = DefaultMaxIsolationCalls
	}
	if o.MaxIsolationCalls < 0 {
		o.MaxIsolationCalls = 0
	}
	r := &o.RateLimit
	if r.ReadsPerSecond <= 0 {
		r.ReadsPerSecond = DefaultReadsPerSecond
	}
	if r.ReadBurst <= 0 {
		r.ReadBurst = DefaultReadBurst
	}
	if r.WritesPerSecond <= 0 {
		r.WritesPerSecond = DefaultWritesPerSecond
	}
	if r.WriteBurst <= 0 {
		r.WriteBurst = DefaultWriteBurst
	}
	o.CacheTTL = cmp.Or(o.CacheTTL, DefaultCacheTTL)
	if o.maxIDsPerCall <= 0 {
		o.maxIDsPerCall = MaxIDsPerCall
	}
	return o
}
