package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/operator"
)

// controller is a running nodetags controller, in this process or not.
type controller interface {
	// metrics returns the controller's Prometheus metrics in text format.
	metrics() (string, error)
	stop() error
}

// inProcess is the nodetags controller in a controller-runtime manager in
// this process: leader election off, metrics off, the Kubernetes client
// budget of `tagsync run` (QPS 100, burst 200).
type inProcess struct {
	provider *azure.Provider
	cancel   context.CancelFunc
	done     chan error
}

func (b *bench) startInProcess(ctx context.Context, cloud *simCloud) (*inProcess, error) {
	p, err := cloud.provider(ctx)
	if err != nil {
		return nil, err
	}
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
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, b.o.timeout, true, func(ctx context.Context) (bool, error) {
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

// metrics renders the few metric families the harness reads from
// controller-runtime's registry in Prometheus text format (cheaper than the
// full exposition, which the harness samples every 100 ms).
func (c *inProcess) metrics() (string, error) {
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "tagsync_") && name != "rest_client_rate_limiter_duration_seconds" {
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

func (c *inProcess) stop() error {
	c.cancel()
	select {
	case err := <-c.done:
		return err
	case <-time.After(time.Minute):
		return errors.New("the manager did not stop within a minute")
	}
}

// separate is `tagsync run` in its own process.
type separate struct {
	cmd         *exec.Cmd
	metricsAddr string
	logFile     string
	command     []string
	exited      chan error
}

// buildTagsync builds cmd/tagsync into dir once (unless -tagsync names a binary).
func (b *bench) buildTagsync(ctx context.Context, dir string) (string, error) {
	if b.o.tagsyncBin != "" {
		return filepath.Abs(b.o.tagsyncBin)
	}
	bin := filepath.Join(dir, "tagsync")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	logf("building cmd/tagsync for the memory scenario")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/tagsync")
	cmd.Dir = b.env.RootDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/tagsync: %w\n%s", err, out)
	}
	return bin, nil
}

// startSeparate runs `tagsync run` against the control plane and armsim:
// leader election off, default Kubernetes client budget, default Azure
// provider settings (no --azure-* tuning flags), client-secret login.
func (b *bench) startSeparate(ctx context.Context, bin, dir string, cloud *simCloud, extra []string) (*separate, error) {
	kubeconfig, secret, err := b.processFiles(dir, cloud)
	if err != nil {
		return nil, err
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	probeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"run",
		"--kubeconfig", kubeconfig,
		"--leader-elect=false",
		"--metrics-secure=false", // the harness scrapes plain HTTP on loopback
		"--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", probeAddr,
		"--azure-arm-endpoint", cloud.srv.URL(),
		"--azure-authority-host", cloud.srv.URL(),
		"--azure-ca-file", cloud.srv.CAFile(),
		"--azure-auth-mode", "client-secret",
		"--azure-tenant-id", cloud.srv.TenantID(),
		"--azure-client-id", armsimtest.ClientID,
		"--azure-client-secret-file", secret,
		"--zap-log-level", "info",
	}
	return b.launch(ctx, bin, append(args, extra...), nil, dir, metricsAddr)
}

// processFiles writes the kubeconfig and the client secret file.
func (b *bench) processFiles(dir string, cloud *simCloud) (kubeconfig, secret string, err error) {
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, b.env.KubeConfig, 0o600); err != nil {
		return "", "", err
	}
	secret, err = cloud.secretFile()
	return kubeconfig, secret, err
}

// launch starts a controller process and waits until its workers run.
func (b *bench) launch(ctx context.Context, bin string, args, env []string, dir, metricsAddr string) (*separate, error) {
	s := &separate{metricsAddr: metricsAddr, logFile: filepath.Join(dir, "controller.log"), exited: make(chan error, 1)}
	s.command = append(append([]string{}, env...), append([]string{bin}, args...)...)
	logOut, err := os.Create(s.logFile)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = logOut, logOut
	// No inherited AZURE_* settings: the flags are the whole configuration.
	s.cmd.Env = append(cleanEnv(), env...)
	if err := s.cmd.Start(); err != nil {
		logOut.Close()
		return nil, err
	}
	go func() {
		s.exited <- s.cmd.Wait()
		logOut.Close()
	}()
	logf("started %s (pid %d), log %s", strings.Join(s.command, " "), s.cmd.Process.Pid, s.logFile)
	// Workers start once the informers synced: controller-runtime logs it.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, b.o.timeout, true, func(context.Context) (bool, error) {
		if err := s.running(); err != nil {
			return false, err
		}
		data, _ := os.ReadFile(s.logFile)
		return strings.Contains(string(data), "Starting workers"), nil
	})
	if err != nil {
		_ = s.stop()
		return nil, err
	}
	return s, nil
}

func (s *separate) pid() int { return s.cmd.Process.Pid }

// running reports an early exit as an error.
func (s *separate) running() error {
	select {
	case err := <-s.exited:
		s.exited <- err
		return fmt.Errorf("the controller process exited: %v; log:\n%s", err, tail(s.logFile, 40))
	default:
		return nil
	}
}

func (s *separate) metrics() (string, error) {
	resp, err := http.Get("http://" + s.metricsAddr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("metrics: HTTP %d", resp.StatusCode)
	}
	return string(body), nil
}

// stop sends SIGTERM to the process this harness started and waits.
func (s *separate) stop() error {
	if s.running() != nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("the controller process did not stop on SIGTERM within 30s; killed")
	}
}

// procMemory reads VmRSS and VmHWM (peak RSS) of a process, in bytes.
func procMemory(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			rss = kb * 1024
		case "VmHWM:":
			hwm = kb * 1024
		}
	}
	return rss, hwm, sc.Err()
}

// procCPU is the CPU time (user + system) a process has used, in seconds.
func procCPU(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which is in parentheses): state is
	// field 3, utime 14, stime 15, in clock ticks (100 per second on Linux).
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100
}

// metricValue sums the samples of a metric (name exactly, e.g.
// `tagsync_nodetags_pass_duration_seconds_sum`) whose labels contain every
// given `key="value"` pair, in Prometheus text format.
func metricValue(text, name string, labels ...string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		series, val := line[:sp], line[sp+1:]
		metric, lbls := series, ""
		if i := strings.IndexByte(series, '{'); i >= 0 {
			metric, lbls = series[:i], series[i:]
		}
		if metric != name {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(lbls, l) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			sum += v
		}
	}
	return sum
}

// passStats are the nodetags pass counters of a controller.
type passStats struct {
	count float64 // passes finished
	sum   float64 // seconds spent in them
	fresh float64 // passes that read the cloud fresh
	// throttled is the time the controller's Kubernetes PATCH requests
	// waited for the client-side rate limiter (QPS 100, burst 200), summed
	// over requests (in-process only: `tagsync run` does not export it).
	throttled float64
}

func readPasses(c controller) (passStats, error) {
	text, err := c.metrics()
	if err != nil {
		return passStats{}, err
	}
	sel := fmt.Sprintf("nodetagsync=%q", syncName)
	return passStats{
		count:     metricValue(text, "tagsync_nodetags_pass_duration_seconds_count", sel),
		sum:       metricValue(text, "tagsync_nodetags_pass_duration_seconds_sum", sel),
		fresh:     metricValue(text, "tagsync_nodetags_passes_total", sel, `fresh="true"`),
		throttled: metricValue(text, "rest_client_rate_limiter_duration_seconds_sum", `verb="PATCH"`),
	}, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// cleanEnv is the environment without AZURE_*, KUBECONFIG and the Go
// runtime's GOMEMLIMIT / GOGC (the measured process runs with defaults).
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AZURE_") || strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "GOGC=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
