package sqs

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloudchange"
)

// Name is the source's name in logs, metrics and status, and the Source of
// the changes it publishes.
const Name = "sqs"

// Defaults of the backoff after a failed receive.
const (
	DefaultFirstBackoff = time.Second
	DefaultMaxBackoff   = time.Minute
)

// Source receives EventBridge events from an SQS queue and publishes the
// changes they report (see the package doc). It implements cloudchange.Source.
type Source struct {
	cfg    Config
	sink   cloudchange.Sink
	client *sqs.Client
	// stsClient asks who the source is (learnSelf).
	stsClient *sts.Client
	log       logr.Logger
	metrics   *metrics
	requests  *cloud.RequestMetrics
	first     time.Duration // backoff
	max       time.Duration

	slots  *semaphore.Weighted // one per message in flight
	acks   chan message        // messages done, to delete; buffered MaxInFlight
	holds  holds               // messages published and not done, kept hidden
	attr   attribution         // removals waiting for the CloudTrail event naming who made them
	health healthState

	// The visibility timeout receives ask for and the heartbeat extends
	// to, in seconds; inspect sets it and wakes the heartbeat when it
	// changes.
	visibilitySeconds atomic.Int64
	visibilityChanged chan struct{}

	// The EventBridge rule check (Config.CheckRules).
	rulesClient *eventbridge.Client
	rulesMu     sync.Mutex
	rules       ruleState
	arn         string

	// Owned by the receive loop.
	lastReason   string // the last reason logged
	lastQueueLog string // what inspect last logged
	warning      string // the Health reason while up (no dead-letter queue)
}

var _ cloudchange.Source = (*Source)(nil)

// options tune a Source; New's Option functions set them.
type options struct {
	registerer prometheus.Registerer
	logger     *logr.Logger
	awsOptions []aws.Option
	first, max time.Duration
}

// Option sets an option of New.
type Option func(*options)

// WithRegisterer registers the source's metrics on r instead of
// controller-runtime's metrics registry; nil registers nothing.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(o *options) { o.registerer = r }
}

// WithLogger logs through l instead of controller-runtime's logger.
func WithLogger(l logr.Logger) Option { return func(o *options) { o.logger = &l } }

// WithAWSOptions passes options to the AWS configuration loading
// (aws.LoadConfig), e.g. aws.WithHTTPClient or a test's
// aws.WithLoadOptions.
func WithAWSOptions(opts ...aws.Option) Option {
	return func(o *options) { o.awsOptions = append(o.awsOptions, opts...) }
}

// WithBackoff sets the wait after a failed receive: first, doubling to max
// while the failures go on (default 1 s to 1 min).
func WithBackoff(first, max time.Duration) Option {
	return func(o *options) { o.first, o.max = first, max }
}

// New builds a Source reading cfg's queue and publishing to sink. It loads
// the AWS configuration (aws.LoadConfig: cfg.AWS, then the default chain)
// and registers the metrics, but sends no request: Start does.
func New(cfg Config, sink cloudchange.Sink, opts ...Option) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sqs: %w", err)
	}
	cfg = cfg.withDefaults()
	o := options{registerer: crmetrics.Registry, first: DefaultFirstBackoff, max: DefaultMaxBackoff}
	for _, f := range opts {
		f(&o)
	}
	awsCfg, err := aws.LoadConfig(context.Background(), cfg.AWS, o.awsOptions...)
	if err != nil {
		return nil, fmt.Errorf("sqs: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("sqs: no AWS region: the queue URL %q names none; set %s or %s", cfg.QueueURL, aws.FlagRegion, aws.EnvRegion)
	}
	m, err := newMetrics(o.registerer)
	if err != nil {
		return nil, err
	}
	requests, err := cloud.NewRequestMetrics(aws.ProviderName, o.registerer)
	if err != nil {
		return nil, fmt.Errorf("sqs: register metrics: %w", err)
	}
	client := sqs.NewFromConfig(awsCfg, func(so *sqs.Options) {
		so.APIOptions = append(slices.Clip(so.APIOptions), aws.CountRequests(requests))
	})
	rules := eventbridge.NewFromConfig(awsCfg, func(eo *eventbridge.Options) {
		eo.APIOptions = append(slices.Clip(eo.APIOptions), aws.CountRequests(requests))
	})
	stsClient := sts.NewFromConfig(awsCfg, func(so *sts.Options) {
		so.APIOptions = append(slices.Clip(so.APIOptions), aws.CountRequests(requests))
	})
	log := ctrl.Log.WithName("events").WithName(Name)
	if o.logger != nil {
		log = *o.logger
	}
	s := &Source{cfg: cfg, sink: sink, client: client, stsClient: stsClient, rulesClient: rules, log: log, metrics: m, requests: requests, first: o.first, max: o.max,
		slots: semaphore.NewWeighted(int64(cfg.MaxInFlight)), acks: make(chan message, cfg.MaxInFlight),
		visibilityChanged: make(chan struct{}, 1)}
	s.visibilitySeconds.Store(int64(DefaultVisibilityTimeout / time.Second))
	s.health.set(false, "not started", time.Now())
	return s, nil
}

// Name returns "sqs".
func (s *Source) Name() string { return Name }

// Cloud is the cloud whose changes the source receives: "aws".
func (s *Source) Cloud() string { return "aws" }

// Health says whether the source receives and, with CheckRules, an
// enabled EventBridge rule sends to its queue. While up, Reason may hold a
// warning (the queue has no dead-letter queue).
func (s *Source) Health() cloudchange.Health {
	h := s.health.get()
	if missing := s.rulesDown(); h.Up && missing != "" {
		h.Up, h.Reason = false, missing
	}
	return h
}

// Calls returns how many HTTP requests the source sent, by operation
// ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:DeleteMessageBatch",
// "sqs:ChangeMessageVisibilityBatch", "sqs:GetQueueAttributes"), SDK
// retries included.
func (s *Source) Calls() map[string]int { return s.requests.Calls() }
