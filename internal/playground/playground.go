// Package playground is tagsync's local demo (`tagsync demo`, `make demo`):
// it starts a real kube-apiserver and etcd (envtest, binaries from bin/k8s),
// the ARM simulator (internal/armsim) and the tagsync controllers (NodeTagSync,
// metadata and label sync) in-process with the Azure provider pointed at the
// simulator, seeds an AKS-like estate and its Nodes, installs Cluster API's
// and Metal3's CRDs for a Cluster whose workload cluster is the playground
// itself, serves the controller's Event Grid webhook on loopback (plain
// HTTP, a shared secret) for armsim's event subscription, and plays a
// scripted scenario. Each step makes one change and
// polls a check with a deadline; the package prints a timeline of what
// changed where and how long it took to converge, then tables of labels,
// tags and ARM calls.
//
// The playground owns every process and temporary file it creates and
// removes them when Run returns, also when its context is cancelled
// (Ctrl-C).
package playground

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/tags"
)

// DefaultStepTimeout is how long a step's check may take to hold.
const DefaultStepTimeout = 30 * time.Second

// Options configure Run.
type Options struct {
	// Out receives the timeline and the tables (default os.Stdout).
	Out io.Writer
	// Keep leaves everything running after the scenario, prints how to reach
	// it (kubeconfig, armsim endpoint) and waits for the context to end.
	Keep bool
	// StepTimeout bounds each step's check (default DefaultStepTimeout).
	StepTimeout time.Duration
	// Verbose sends the controller's and armsim's logs to LogOut instead of
	// a file in the temporary directory.
	Verbose bool
	// LogOut receives the logs when Verbose (default os.Stderr).
	LogOut io.Writer
	// AssetsDir holds kube-apiserver and etcd (default $KUBEBUILDER_ASSETS,
	// else bin/k8s in the repository).
	AssetsDir string
	// RepoDir is the tagsync repository, for its CRDs in config/crd/bases
	// (default: found above the working directory or the executable).
	RepoDir string
}

func (o Options) withDefaults() Options {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.LogOut == nil {
		o.LogOut = os.Stderr
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = DefaultStepTimeout
	}
	return o
}

// ErrInterrupted is returned (wrapped) when the context ends before the
// scenario does, e.g. on Ctrl-C.
var ErrInterrupted = errors.New("interrupted")

// Run starts the playground, plays the scenario and reports it. It returns
// nil when every step held; a *StepError naming the step when one did not;
// an error wrapping ErrInterrupted when ctx ended first. With Keep it then
// waits for ctx to end. Everything it started is stopped and its temporary
// directory removed before it returns.
func Run(ctx context.Context, o Options) (err error) {
	o = o.withDefaults()
	pg := &playground{opts: o, tl: newTimeline(o.Out, time.Now())}
	defer func() {
		if cerr := pg.close(); cerr != nil && err == nil {
			err = cerr
		}
		if errors.Is(err, ErrInterrupted) {
			fmt.Fprintln(o.Out, "\ninterrupted: stopped the controller, kube-apiserver, etcd and armsim; removed the temporary files")
		}
	}()
	fmt.Fprintln(o.Out, "tagsync demo: a real kube-apiserver, simulated Azure (armsim) and the tagsync controllers (node sync, metadata, workload tags, label sync)")
	fmt.Fprintln(o.Out)
	if err := pg.start(ctx); err != nil {
		return interrupted(ctx, err)
	}
	err = newRunner(pg.tl, o.StepTimeout, pg.armCallCount).run(pg.runCtx, scenario(pg))
	if ctx.Err() != nil {
		return interrupted(ctx, err)
	}
	pg.report()
	if err != nil {
		pg.printLogTail()
	}
	if o.Keep {
		pg.printKeep(err)
		<-pg.runCtx.Done()
		if cause := context.Cause(pg.runCtx); !errors.Is(cause, ErrInterrupted) && err == nil {
			err = cause // the controller stopped on its own
		}
		fmt.Fprintln(o.Out, "\nstopping...")
	}
	return err
}

// interrupted returns an error wrapping ErrInterrupted when ctx has ended
// (whatever err was: it is a consequence), else err.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("%w (%v)", ErrInterrupted, context.Cause(ctx))
}

// playground is one run: what it started, what it seeded, and the clients
// the scenario uses.
type playground struct {
	opts Options
	tl   *timeline
	dir  string // temporary directory: kubeconfig, CA, logs

	logFile *os.File
	logPath string

	cp       *controlPlane
	sim      *armsim.Server
	provider *gatedProvider
	ctl      *controller
	events   *eventWebhook
	layout   *layout
	codec    tags.Codec

	// runCtx ends when Run's context does (cause: ErrInterrupted) or the
	// controller fails (cause: its error).
	runCtx    context.Context
	cancelRun context.CancelCauseFunc

	syncRequests int

	// metal is the labelsync act's client (Cluster API and Metal3 types),
	// nil when its CRDs could not be installed; metalErr then says why.
	metal    client.Client
	metalErr error
}

// start brings everything up and seeds it; the controller is built but
// started by the scenario's first step.
func (pg *playground) start(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "tagsync-demo-")
	if err != nil {
		return fmt.Errorf("creating a temporary directory: %w", err)
	}
	pg.dir = dir
	logs, err := pg.openLogs()
	if err != nil {
		return err
	}
	setLogger(logs)
	if err := pg.startKubernetes(ctx); err != nil {
		return err
	}
	if pg.prepareLabelSync(ctx); ctx.Err() != nil {
		return ctx.Err()
	}
	if pg.sim, err = startArmsim(dir, logs); err != nil {
		return err
	}
	pg.tl.note("armsim (simulated Azure Resource Manager + Entra ID) at %s", pg.sim.URL())
	if err := pg.seed(ctx); err != nil {
		return err
	}
	p, err := newProvider(ctx, pg.sim, subscriptionID)
	var ev operator.EventsOptions
	if err != nil {
		return err
	}
	pg.provider = &gatedProvider{Provider: p}
	pg.events, ev, err = newEventWebhook(dir)
	if err != nil {
		return err
	}
	if pg.ctl, err = newController(ctx, pg.cp.config, pg.provider, ev); err != nil {
		return err
	}
	pg.runCtx, pg.cancelRun = context.WithCancelCause(context.WithoutCancel(ctx))
	context.AfterFunc(ctx, func() { pg.cancelRun(interrupted(ctx, nil)) })
	return ctx.Err()
}

// openLogs returns where logs go: LogOut when verbose, else a file in the
// temporary directory.
func (pg *playground) openLogs() (io.Writer, error) {
	if pg.opts.Verbose {
		return pg.opts.LogOut, nil
	}
	pg.logPath = filepath.Join(pg.dir, "controller.log")
	f, err := os.Create(pg.logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the log file: %w", err)
	}
	pg.logFile = f
	return f, nil
}

// startKubernetes starts the control plane, reporting how long it took.
func (pg *playground) startKubernetes(ctx context.Context) error {
	pg.tl.note("starting kube-apiserver and etcd...")
	start := time.Now()
	cp, err := startControlPlane(pg.opts, pg.dir)
	if err != nil {
		return err
	}
	pg.cp = cp
	if err := ctx.Err(); err != nil {
		return err
	}
	pg.tl.note("kube-apiserver ready at %s (%s)", strings.TrimSuffix(cp.config.Host, "/"), round(time.Since(start)))
	return nil
}

// seed creates the estate in armsim and the Nodes and NodeTagSync in
// Kubernetes, and reads back the sync's label prefix.
func (pg *playground) seed(ctx context.Context) error {
	pg.layout = newLayout()
	if err := pg.layout.seedCloud(pg.sim); err != nil {
		return fmt.Errorf("seeding armsim: %w", err)
	}
	pg.tl.note("seeded armsim: %s (2 Uniform VMSS × 3, a Flexible VMSS × 2, an availability-set VM) and %s (1 VM)",
		nodeRG, extraRG)
	if err := pg.layout.seedCluster(ctx, pg.cp.client); err != nil {
		return err
	}
	nts, err := pg.nodeTagSync(ctx)
	if err != nil {
		return err
	}
	pg.codec = tags.Codec{Prefix: tags.DefaultPrefix, Rules: &azure.TagRules}
	if nts.Spec.LabelPrefix != nil {
		pg.codec.Prefix = *nts.Spec.LabelPrefix
	}
	pg.tl.note("created %d Nodes (one on-prem) and NodeTagSync %q (labelPrefix %s, %s, conflictPolicy %s)",
		len(pg.layout.Nodes), syncName, pg.codec.Prefix, nts.Spec.Direction, nts.Spec.ConflictPolicy)
	return nil
}

// close stops everything in reverse order and removes the temporary
// directory.
func (pg *playground) close() error {
	if pg.cancelRun != nil {
		pg.cancelRun(context.Canceled)
	}
	var errs []error
	errs = append(errs, pg.ctl.stop(), pg.cp.stop())
	if pg.sim != nil {
		errs = append(errs, pg.sim.Close())
	}
	if pg.logFile != nil {
		errs = append(errs, pg.logFile.Close())
	}
	if pg.dir != "" {
		errs = append(errs, os.RemoveAll(pg.dir))
	}
	return errors.Join(errs...)
}

// armCallCount is the number of ARM requests armsim served so far (token
// requests excluded).
func (pg *playground) armCallCount() int {
	n := 0
	for op, c := range pg.sim.Calls() {
		if !strings.HasPrefix(op, "Identity.") {
			n += c.Total
		}
	}
	return n
}
