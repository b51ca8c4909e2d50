// Package operator wires tagsync's controller manager: the controller-runtime
// manager (leader election, metrics, health probes), the cloud provider and
// the controllers. `tagsync run` and `tagsync demo` both start it.
package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/clouds"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/infratags"
	"github.com/tagsync/tagsync/internal/scheme"
)

// Options configure the controller manager. The zero value serves plain
// metrics on controller-runtime's default address; DefaultOptions are the
// secure defaults of `tagsync run`.
type Options struct {
	// MetricsAddr serves Prometheus metrics ("0" disables).
	MetricsAddr string
	// MetricsSecure serves metrics over HTTPS, only to callers whose bearer
	// token the API server accepts (TokenReview) and who may get /metrics
	// (SubjectAccessReview). False serves plain HTTP to anyone.
	MetricsSecure bool
	// MetricsCertDir holds the metrics serving certificate and key, named
	// MetricsCertName and MetricsKeyName (default tls.crt and tls.key),
	// reloaded when they change. Empty: controller-runtime's default
	// directory if it holds both, else a self-signed certificate made at
	// start.
	MetricsCertDir, MetricsCertName, MetricsKeyName string
	// EnableHTTP2 lets the metrics server speak HTTP/2; off, it speaks only
	// HTTP/1.1, out of reach of HTTP/2 stream attacks (rapid reset).
	EnableHTTP2 bool
	// ProbeAddr serves /healthz and /readyz ("0" disables).
	ProbeAddr string
	// PprofAddr serves Go's net/http/pprof profiles ("" or "0": off).
	PprofAddr string
	// LeaderElection makes only one replica act at a time (a Lease).
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease.
	LeaderElectionNamespace string
	// LeaderElectionID names the Lease.
	LeaderElectionID string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// GracefulShutdownTimeout bounds how long a stop waits for the
	// controllers' work in flight (reconciles, cloud calls, Kubernetes
	// writes, connects to workload clusters); Run returns at most
	// stopMargin later whatever still runs. Zero: DefaultGracefulShutdown.
	GracefulShutdownTimeout time.Duration
	// ShutdownDelay is how long a stop keeps serving with readiness failing
	// before it stops anything (--shutdown-delay): the Service and an
	// Ingress drop the replica first, so that the webhook does not refuse
	// deliveries they still send it. Zero: no delay.
	ShutdownDelay time.Duration
	// Clouds are the clouds' settings (from the registry,
	// internal/cloud/clouds): the provider of each that is enabled is
	// built (Azure always; AWS when a region is set, so a process without
	// AWS settings runs without it and its AWSMetadata objects report
	// that).
	Clouds clouds.Set
	// Provider, when set, is used instead of building providers from
	// Clouds.
	Provider cloud.Provider
	// Providers, when set, are used instead of building them from Clouds
	// (together with Provider, if that is set too).
	Providers []cloud.Provider
	// Namespaces, when set, limits the namespaced objects the controllers
	// see (CloudMetadata, AzureMetadata, AWSMetadata) to these namespaces;
	// cluster-scoped objects (Nodes, NodeTagSyncs) are unaffected.
	Namespaces []string
	// InfraTags configure the OpenShift adapter (infratags).
	InfraTags infratags.Options
	// Audit receives one record per cloud mutation of the metadata
	// controller; nil writes none.
	Audit *audit.Log
	// Controllers names the controllers to start (see Controllers); empty
	// or "all" starts every one.
	Controllers []string
	// SkipNameValidation lets several managers with the same controllers run
	// in one process (tests, benchmarks).
	SkipNameValidation bool
	// Recorder, when set, gives each controller its event recorder (see
	// Deps.Recorder); tests use it.
	Recorder func(controller string) events.EventRecorder
	// Events turn cloud change events into targeted passes; off unless a
	// source (or a Hub) is given.
	Events EventsOptions
	// Logger is the manager's logger (also its controllers' and the leader
	// elector's); the zero Logger means controller-runtime's (ctrl.Log).
	Logger logr.Logger
}

// DefaultOptions are the defaults of `tagsync run`.
func DefaultOptions() Options {
	return Options{
		MetricsAddr:             ":8443",
		MetricsSecure:           true,
		ProbeAddr:               ":8081",
		LeaderElection:          true,
		LeaderElectionNamespace: "tagsync-system",
		LeaderElectionID:        "tagsync-leader",
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             2 * time.Second,
		GracefulShutdownTimeout: DefaultGracefulShutdown,
	}
}

// DefaultGracefulShutdown is how long a stop waits for the work in flight:
// well inside Kubernetes' default 30s between SIGTERM and SIGKILL.
const DefaultGracefulShutdown = 10 * time.Second

// gracefulShutdown is o.GracefulShutdownTimeout, or its default.
func (o Options) gracefulShutdown() time.Duration {
	if o.GracefulShutdownTimeout <= 0 {
		return DefaultGracefulShutdown
	}
	return o.GracefulShutdownTimeout
}

// Run starts the manager and blocks until ctx ends or it fails.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	m, err := Build(ctx, cfg, o)
	if err != nil {
		return err
	}
	return runUntilStopped(m.stopping.delay(ctx, o.ShutdownDelay), m.Manager, o.gracefulShutdown()+stopMargin)
}

// Manager is a built controller manager and the controllers in it.
type Manager struct {
	ctrl.Manager
	// Controllers are what each registry entry's Setup returned, by name.
	Controllers map[string]any
	// Events is the hub the event sources publish to (nil: events off).
	Events *cloudchange.Hub
	// stopping fails readiness from the stop signal on (ShutdownDelay).
	stopping *stopping
}

// Validate checks the options that can be checked before starting, naming
// the `tagsync run` flag to fix.
func (o Options) Validate() error {
	var errs []error
	if err := validHeartbeat(o.Events.Heartbeat); err != nil {
		errs = append(errs, err)
	}
	if o.LeaderElection && o.LeaderElectionNamespace == "" {
		errs = append(errs, errors.New("leader election needs a namespace for its Lease (--leader-election-namespace)"))
	}
	return errors.Join(append(errs, o.validateMetricsCert())...)
}

// New builds the manager with the selected controllers (Options.Controllers)
// registered, not yet started; see Build.
func New(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	m, err := Build(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	return m.Manager, nil
}

// Build builds the manager with the selected controllers registered, not
// yet started, and returns the controllers too. It checks the options and
// builds the cloud provider before it contacts the API server, so
// configuration errors come first.
func Build(ctx context.Context, cfg *rest.Config, o Options) (*Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	selected, err := Select(o.Controllers)
	if err != nil {
		return nil, err
	}
	own := o.Events.ownWrites()
	providers, err := o.providers(ctx, own)
	if err != nil {
		return nil, err
	}
	cacheOpts := CacheOptions(selected)
	if len(o.Namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.Namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	lock, peers, err := newLeaderLock(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	mgr, err := newManager(ctx, cfg, o, cacheOpts, lock)
	if err != nil {
		return nil, err
	}
	handover, err := newLeaseHandover(cfg, o)
	if err != nil {
		return nil, err
	}
	hub, err := o.Events.eventHub(mgr, own, peers, handover)
	if err != nil {
		return nil, err
	}
	deps := Deps{Providers: cloud.NewProviders(providers...), Recorder: o.Recorder, Audit: o.Audit, InfraTags: o.InfraTags, Events: hub}
	if len(o.Events.Heartbeat) > 0 && hub != nil {
		every := o.Events.HeartbeatInterval
		if every <= 0 {
			every = DefaultHeartbeatInterval
		}
		if err := mgr.Add(&heartbeat{resources: o.Events.Heartbeat, every: every, providers: deps.Providers,
			log: o.logger().WithName("events").WithName("heartbeat")}); err != nil {
			return nil, err
		}
	}
	stop := &stopping{}
	if err := mgr.AddReadyzCheck("not-stopping", stop.check); err != nil {
		return nil, err
	}
	built := &Manager{Manager: mgr, Controllers: map[string]any{}, Events: hub, stopping: stop}
	for _, c := range selected {
		ctl, err := c.Setup(mgr, deps)
		if err != nil {
			return nil, fmt.Errorf("setting up the %s controller: %w", c.Name, err)
		}
		built.Controllers[c.Name] = ctl
	}
	return built, nil
}

// providers are o.Provider and o.Providers when either is set, else those
// of the enabled clouds of o.Clouds (recording their writes in own).
func (o Options) providers(ctx context.Context, own *cloud.OwnWrites) ([]cloud.Provider, error) {
	if o.Provider != nil || len(o.Providers) > 0 {
		ps := slices.Clone(o.Providers)
		if o.Provider != nil {
			ps = append(ps, o.Provider)
		}
		return ps, nil
	}
	return o.Clouds.Providers(ctx, cloud.ProviderOptions{Registerer: crmetrics.Registry, OwnWrites: own})
}

// logger is o.Logger, or controller-runtime's when it is the zero Logger.
func (o Options) logger() logr.Logger {
	if o.Logger.GetSink() == nil {
		return ctrl.Log
	}
	return o.Logger
}

// newManager builds the controller-runtime manager with its health checks;
// with lock (not nil) it elects its leader with that Lease lock.
func newManager(ctx context.Context, cfg *rest.Config, o Options, cacheOpts cache.Options, lock *leaderLock) (ctrl.Manager, error) {
	opts := ctrl.Options{
		Logger:                        ShutdownLogger(ctx, o.logger()),
		Scheme:                        scheme.New(),
		Cache:                         cacheOpts,
		Controller:                    config.Controller{SkipNameValidation: &o.SkipNameValidation},
		Metrics:                       o.metricsServer(),
		HealthProbeBindAddress:        o.ProbeAddr,
		PprofBindAddress:              o.PprofAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 &o.RenewDeadline,
		RetryPeriod:                   &o.RetryPeriod,
		GracefulShutdownTimeout:       ptr.To(o.gracefulShutdown()),
	}
	if lock != nil {
		opts.LeaderElectionResourceLockInterface = lock
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager: %w", err)
	}
	if lock != nil {
		lock.recordTo(mgr)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}
