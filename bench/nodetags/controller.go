package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
	"github.com/tagsync/tagsync/internal/operator"
)

// controller is a running nodetags controller, in this process or not.
type controller interface {
	// Metrics returns the controller's Prometheus metrics in text format.
	Metrics() (string, error)
	// Calls are the Azure provider's counts by operation (nil when the
	// provider is not in this process).
	Calls() map[string]int
	Stop() error
}

// separate is `tagsync run` as its own process.
type separate struct{ *benchkit.Process }

// Calls are the provider's request attempts by operation as the process's
// tagsync_cloud_requests_total counts them (nil when it cannot be scraped).
func (p separate) Calls() map[string]int {
	text, err := p.Metrics()
	if err != nil {
		return nil
	}
	out := map[string]int{}
	benchkit.EachSample(text, cloud.MetricRequests, func(series string, v float64) {
		out[benchkit.Label(series, "operation")] += int(v)
	})
	return out
}

// inProcess is the nodetags controller in a controller-runtime manager in
// this process: leader election off, metrics off, the Kubernetes client
// budget of `tagsync run` (QPS 100, burst 200).
type inProcess struct {
	provider countingProvider
	cancel   context.CancelFunc
	done     chan error
}

// countingProvider is a provider that counts its requests by operation.
type countingProvider interface {
	cloud.Provider
	Calls() map[string]int
}

// startInProcess starts the controller in this process on armsim.
func (b *bench) startInProcess(ctx context.Context, cloud *simCloud) (*inProcess, error) {
	p, err := cloud.provider(ctx)
	if err != nil {
		return nil, err
	}
	return b.startManager(ctx, p)
}

// startManager starts the controller in this process on provider p.
func (b *bench) startManager(ctx context.Context, p countingProvider) (*inProcess, error) {
	cfg := rest.CopyConfig(b.env.Config)
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "tagsync"
	// Built as `tagsync run` builds it (operator.New: the registry's
	// controllers and cache options), minus leader election, metrics and
	// probes. Scenarios start one manager after the other in this process.
	mgr, err := operator.New(ctx, cfg, operator.Options{
		MetricsAddr: "0", ProbeAddr: "0", Provider: p, SkipNameValidation: true,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &inProcess{provider: p, cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- mgr.Start(ctx) }()
	// The controller starts its workers once its Node and NodeTagSync
	// informers have synced; wait for the same informers (the manager's
	// cache shares them).
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, b.o.Timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-c.done:
			return false, fmt.Errorf("the manager stopped: %w", err)
		default:
		}
		for _, obj := range []client.Object{&corev1.Node{}, &v1alpha1.NodeTagSync{}} {
			inf, err := mgr.GetCache().GetInformer(ctx, obj)
			if err != nil || !inf.HasSynced() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		cancel()
		return nil, err
	}
	time.Sleep(500 * time.Millisecond)
	return c, nil
}

// Metrics renders the few metric families the harness reads from
// controller-runtime's registry in Prometheus text format (cheaper than the
// full exposition, which the harness samples every 100 ms).
func (c *inProcess) Metrics() (string, error) {
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "tagsync_") && name != "rest_client_rate_limiter_duration_seconds" && name != activeWorkers {
			continue
		}
		for _, m := range mf.GetMetric() {
			var lbls []string
			for _, l := range m.GetLabel() {
				lbls = append(lbls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			ls := "{" + strings.Join(lbls, ",") + "}"
			switch {
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				fmt.Fprintf(&sb, "%s_sum%s %g\n%s_count%s %d\n", name, ls, h.GetSampleSum(), name, ls, h.GetSampleCount())
			case m.GetCounter() != nil:
				fmt.Fprintf(&sb, "%s%s %g\n", name, ls, m.GetCounter().GetValue())
			case m.GetGauge() != nil:
				fmt.Fprintf(&sb, "%s%s %g\n", name, ls, m.GetGauge().GetValue())
			}
		}
	}
	return sb.String(), nil
}

// Calls are the provider's counts by operation.
func (c *inProcess) Calls() map[string]int { return c.provider.Calls() }

func (c *inProcess) Stop() error {
	c.cancel()
	select {
	case err := <-c.done:
		return err
	case <-time.After(time.Minute):
		return errors.New("the manager did not stop within a minute")
	}
}

// startRun runs `tagsync run` (built, or -tagsync) with flags against the
// control plane, its files in dir: the default Kubernetes client budget
// and the provider's defaults (flags name the cloud, not tuning).
func (b *bench) startRun(ctx context.Context, dir string, flags []string) (separate, error) {
	bin, err := benchkit.BuildTagsync(ctx, b.o.Tagsync, b.env.RootDir, b.dir)
	if err != nil {
		return separate{}, err
	}
	p, err := benchkit.StartRun(ctx, b.env, benchkit.Command{Bin: bin, Args: flags, Dir: dir, Timeout: b.o.Timeout})
	return separate{p}, err
}

// passStats are the nodetags pass counters of a controller.
type passStats struct {
	count float64 // passes finished
	sum   float64 // seconds spent in them
	fresh float64 // passes that read the cloud fresh
	// running is the number of passes in progress.
	running float64
	// throttled is the time the controller's Kubernetes PATCH requests
	// waited for the client-side rate limiter (QPS 100, burst 200), summed
	// over requests (in-process only: `tagsync run` does not export it).
	throttled float64
}

// activeWorkers is controller-runtime's gauge of reconciles in progress.
const activeWorkers = "controller_runtime_active_workers"

func readPasses(c controller) (passStats, error) {
	text, err := c.Metrics()
	if err != nil {
		return passStats{}, err
	}
	sel := fmt.Sprintf("nodetagsync=%q", syncName)
	return passStats{
		count:     benchkit.MetricValue(text, "tagsync_nodetags_pass_duration_seconds_count", sel),
		sum:       benchkit.MetricValue(text, "tagsync_nodetags_pass_duration_seconds_sum", sel),
		fresh:     benchkit.MetricValue(text, "tagsync_nodetags_passes_total", sel, `fresh="true"`),
		running:   benchkit.MetricValue(text, activeWorkers, fmt.Sprintf("controller=%q", nodetags.ControllerName)),
		throttled: benchkit.MetricValue(text, "rest_client_rate_limiter_duration_seconds_sum", `verb="PATCH"`),
	}, nil
}
