package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/clouds"
	"github.com/tagsync/tagsync/internal/controller/infratags"
	"github.com/tagsync/tagsync/internal/operator"
)

// runFlags are the flags of `tagsync run`.
type runFlags struct {
	kubeconfig  string
	kubeQPS     float32
	kubeBurst   int
	op          operator.Options
	clouds      clouds.Set
	zapOptions  zap.Options
	memoryLimit string
	auditLog    string
	auditSizeMB int
	// auditFailOpen keeps mutating while audit records cannot be written.
	auditFailOpen bool
	// events are the cloud change event sources' flags.
	events eventFlags
}

// NewRunCommand returns `tagsync run`, the controller manager.
func NewRunCommand() *cobra.Command {
	cmd, _ := newRunCommand()
	return cmd
}

// newRunCommand returns `tagsync run` and the flags it binds.
func newRunCommand() (*cobra.Command, *runFlags) {
	f := &runFlags{op: operator.DefaultOptions(), zapOptions: zap.Options{}}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the controller manager (node tags, metadata, OpenShift and label sync controllers, leader election, metrics, health probes)",
		Long: `Run the tagsync controller manager against the cluster of --kubeconfig (or the
in-cluster config). Azure credentials come from the --azure-* flags or the
standard AZURE_* environment variables (workload identity, managed identity,
service principal with a secret or certificate). AWS credentials come from the
AWS SDK's default chain (IRSA or EKS Pod Identity in a cluster, AWS_* variables,
shared config files); the AWS provider starts when --aws-region or AWS_REGION
is set. Secrets are never logged.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	f.bind(cmd)
	return cmd, f
}

func (f *runFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, in-cluster config, ~/.kube/config)")
	fs.Float32Var(&f.kubeQPS, "kube-api-qps", 100, "Kubernetes API requests per second")
	fs.IntVar(&f.kubeBurst, "kube-api-burst", 200, "Kubernetes API burst")
	f.bindMetrics(fs)
	fs.StringVar(&f.op.ProbeAddr, "health-probe-bind-address", f.op.ProbeAddr, "address of /healthz and /readyz (0 disables)")
	fs.BoolVar(&f.op.LeaderElection, "leader-elect", true, "elect a leader with a Lease so only one replica acts")
	fs.StringVar(&f.op.LeaderElectionNamespace, "leader-election-namespace", defaultNamespace(), "namespace of the leader-election Lease")
	fs.StringVar(&f.op.LeaderElectionID, "leader-election-id", f.op.LeaderElectionID, "name of the leader-election Lease")
	fs.DurationVar(&f.op.LeaseDuration, "lease-duration", f.op.LeaseDuration, "how long a leader's Lease lasts without renewal")
	fs.DurationVar(&f.op.RenewDeadline, "renew-deadline", f.op.RenewDeadline, "how long the leader retries renewing before giving up")
	fs.DurationVar(&f.op.RetryPeriod, "retry-period", f.op.RetryPeriod, "how often candidates try to acquire the Lease")
	fs.DurationVar(&f.op.ShutdownDelay, "shutdown-delay", 0,
		"how long a stop (SIGTERM) first keeps serving with readiness failing, so that the Service and an Ingress drop this replica before its Event Grid webhook stops (the chart sets 5s with the webhook on)")
	fs.DurationVar(&f.op.GracefulShutdownTimeout, "graceful-shutdown-timeout", f.op.GracefulShutdownTimeout,
		"how long a stop (SIGTERM) waits for work in flight (reconciles, cloud calls, Kubernetes writes, connects to workload clusters); the process exits at most 5s later whatever still runs")

	f.clouds = clouds.Bind(fs, cloud.UseRun)
	fs.StringVar(&f.auditLog, "audit-log", audit.SinkStderr, "where the metadata and node sync controllers write one JSON line per cloud mutation: stderr, none, or a file path (rotated by size)")
	fs.IntVar(&f.auditSizeMB, "audit-log-max-size", 100, "size in MiB at which an --audit-log file is rotated (5 rotated files are kept)")
	fs.BoolVar(&f.auditFailOpen, "audit-fail-open", false, "keep making cloud mutations while audit records cannot be written (they are only counted and logged); default: none is made until the audit sink takes records again")
	fs.StringVar(&f.op.InfraTags.Namespace, "openshift-namespace", "", "namespace of the CloudMetadata and Azure/AWSMetadata objects the OpenShift adapter writes (default: --leader-election-namespace)")
	fs.StringVar(&f.op.InfraTags.AzureOwnedTag, "openshift-azure-owned-tag", infratags.DefaultAzureOwnedTag, "the Azure tag that marks a resource as the cluster's ({infraID}: status.infrastructureName)")
	fs.StringVar(&f.op.InfraTags.AWSOwnedTag, "openshift-aws-owned-tag", infratags.DefaultAWSOwnedTag, "the AWS tag that marks a resource as the cluster's ({infraID}: status.infrastructureName)")
	fs.DurationVar(&f.op.InfraTags.CRDPollInterval, "openshift-crd-poll-interval", 30*time.Second, "how often the OpenShift adapter looks for the Infrastructure CRD while it is not installed")
	f.events.bind(fs, &f.op.Events)
	fs.StringSliceVar(&f.op.Namespaces, "namespaces", nil, "namespaces whose CloudMetadata, AzureMetadata and AWSMetadata objects are served, comma-separated (default: all)")

	fs.StringSliceVar(&f.op.Controllers, "controllers", []string{"all"},
		"controllers to start, comma-separated: all, or some of "+strings.Join(operator.ControllerNames(), ", "))
	fs.StringVar(&f.memoryLimit, "memory-limit", "auto", "soft memory limit for the Go runtime (e.g. 120Mi); auto: 90% of the container's cgroup limit, none when there is none; $GOMEMLIMIT wins")

	gfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	f.zapOptions.BindFlags(gfs)
	fs.AddGoFlagSet(gfs)
}

// bindMetrics binds the flags of the metrics endpoint.
func (f *runFlags) bindMetrics(fs *pflag.FlagSet) {
	fs.StringVar(&f.op.MetricsAddr, "metrics-bind-address", f.op.MetricsAddr,
		"address of the Prometheus metrics endpoint (0 disables; with --metrics-secure=false the default is "+plainMetricsAddr+")")
	fs.BoolVar(&f.op.MetricsSecure, "metrics-secure", f.op.MetricsSecure,
		"serve metrics over HTTPS, only to callers whose bearer token may get /metrics (TokenReview, SubjectAccessReview); false: plain HTTP for anyone, for local runs")
	fs.StringVar(&f.op.MetricsCertDir, "metrics-cert-dir", "", "directory with the metrics serving certificate and key (reloaded on change); unset: a self-signed certificate")
	fs.StringVar(&f.op.MetricsCertName, "metrics-cert-name", operator.DefaultMetricsCertName, "certificate file in --metrics-cert-dir")
	fs.StringVar(&f.op.MetricsKeyName, "metrics-cert-key", operator.DefaultMetricsKeyName, "private key file in --metrics-cert-dir")
	fs.StringVar(&f.op.PprofAddr, "pprof-bind-address", "", "address serving Go profiles under /debug/pprof/ for diagnosis, e.g. 127.0.0.1:6060 (unset: off; no authentication, so bind it to loopback)")
	fs.BoolVar(&f.op.EnableHTTP2, "enable-http2", false, "let the metrics server speak HTTP/2 (off: HTTP/1.1 only, out of reach of HTTP/2 rapid-reset attacks)")
}

// plainMetricsAddr is the metrics address with --metrics-secure=false when
// --metrics-bind-address is not given.
const plainMetricsAddr = ":8080"

// setKlogLogger sets klog's process-wide logger. The package's tests, which
// run `tagsync run` in-process next to controller managers whose stopped
// event broadcasters still read klog, replace it before they start.
var setKlogLogger = klog.SetLogger

func (f *runFlags) run(cmd *cobra.Command) error {
	if f.zapOptions.DestWriter == nil {
		f.zapOptions.DestWriter = audit.Stderr // one lock with the audit records on stderr
	}
	logger := zap.New(zap.UseFlagOptions(&f.zapOptions))
	ctrl.SetLogger(logger)
	if err := f.complete(cmd); err != nil {
		return err
	}
	if err := applyMemoryLimit(f.memoryLimit); err != nil {
		return err
	}
	log, err := audit.Open(f.auditLog, audit.FileOptions{MaxSizeMB: f.auditSizeMB})
	if err != nil {
		return err
	}
	defer log.Close()
	log.SetFailOpen(f.auditFailOpen)
	f.op.Audit = log
	cfg, err := f.restConfig()
	if err != nil {
		return err
	}
	// client-go logs through klog: the same format, and no errors for
	// requests the shutdown cancels. Set last: klog's logger is process-wide,
	// and a run refused for its flags leaves it alone.
	setKlogLogger(operator.ShutdownLogger(cmd.Context(), logger))
	kv := []any{"leaderElection", f.op.LeaderElection, "metrics", f.op.MetricsAddr, "metricsSecure", f.op.MetricsSecure}
	for _, c := range f.clouds.Enabled() {
		kv = append(kv, c.Kind().Name, c.String())
	}
	ctrl.Log.WithName("setup").Info("starting tagsync", kv...)
	return operator.Run(cmd.Context(), cfg, f.op)
}

func (f *runFlags) restConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if f.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("loading the Kubernetes client config: %w", err)
	}
	cfg.QPS, cfg.Burst = f.kubeQPS, f.kubeBurst
	cfg.UserAgent = "tagsync"
	return cfg, nil
}

// complete fills in the defaults that depend on other flags, checks the
// flags and completes the clouds' settings; it connects to nothing.
func (f *runFlags) complete(cmd *cobra.Command) error {
	if !f.op.MetricsSecure && !cmd.Flags().Changed("metrics-bind-address") {
		f.op.MetricsAddr = plainMetricsAddr
	}
	if err := f.validate(); err != nil {
		return err
	}
	f.op.Clouds = f.clouds
	sources, err := f.events.sources(f.clouds)
	if err != nil {
		return err
	}
	f.op.Events.Sources = append(f.op.Events.Sources, sources...)
	if len(f.op.Events.Heartbeat) > 0 && len(f.op.Events.Sources) == 0 {
		return errors.New("--events-heartbeat needs an event source (--events-webhook-bind-address or --events-sqs-queue-url): its echo is what it checks")
	}
	f.op.Events.AdvertiseAddress = f.events.advertiseAddress()
	f.op.Events.PeerTokenFile = f.events.peerToken
	f.op.Events.SilentAfter = f.events.hubSilentAfter()
	if f.op.InfraTags.Namespace == "" {
		f.op.InfraTags.Namespace = f.op.LeaderElectionNamespace
	}
	return nil
}

// validate refuses flag values that cannot work, all at once, each error
// naming its flag and what to give instead.
func (f *runFlags) validate() error {
	errs := []error{
		notNegative("--kube-api-qps", float64(f.kubeQPS), "client-go's default"),
		notNegative("--kube-api-burst", float64(f.kubeBurst), "client-go's default"),
		f.clouds.Complete(),
		f.op.Validate(),
	}
	return errors.Join(errs...)
}

// notNegative returns an error when a rate flag is negative; zero means
// the default zeroMeans names.
func notNegative(flag string, v float64, zeroMeans string) error {
	if v < 0 {
		return fmt.Errorf("%s %v is negative: give a positive number, or 0 for %s", flag, v, zeroMeans)
	}
	return nil
}

// defaultNamespace is the Pod's namespace in a cluster, else tagsync-system.
func defaultNamespace() string {
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "tagsync-system"
}

// cgroupMemoryMax is where cgroup v2 exposes the container's memory limit.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// applyMemoryLimit sets the Go runtime's soft memory limit so the garbage
// collector keeps the heap (and RSS) under it instead of growing to twice the
// live set. $GOMEMLIMIT, read by the runtime itself, wins.
func applyMemoryLimit(flagValue string) error {
	if os.Getenv("GOMEMLIMIT") != "" || flagValue == "" || flagValue == "none" {
		return nil
	}
	if flagValue != "auto" {
		q, err := resource.ParseQuantity(flagValue)
		if err != nil || q.Value() <= 0 {
			return fmt.Errorf("--memory-limit %q is not a positive quantity such as 120Mi", flagValue)
		}
		debug.SetMemoryLimit(q.Value())
		return nil
	}
	b, err := os.ReadFile(cgroupMemoryMax)
	if err != nil {
		return nil // not in a memory-limited cgroup
	}
	limit, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || limit <= 0 {
		return nil // "max": no limit
	}
	debug.SetMemoryLimit(limit / 10 * 9)
	return nil
}
