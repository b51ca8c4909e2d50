package benchkit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tagsync/tagsync/internal/testenv"
)

// BuildTagsync returns the tagsync binary to measure: named (a -tagsync
// flag) as an absolute path, else cmd/tagsync of the repository at root
// built into dir (once: a binary already there is reused).
func BuildTagsync(ctx context.Context, named, root, dir string) (string, error) {
	if named != "" {
		return filepath.Abs(named)
	}
	bin := filepath.Join(dir, "tagsync")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	Logf("building cmd/tagsync")
	if err := testenv.BuildTagsync(ctx, root, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// Command is how to start a controller process.
type Command struct {
	Bin  string
	Args []string
	// Env is added to CleanEnv's environment.
	Env []string
	// Dir receives the process's log, controller.log.
	Dir string
	// MetricsAddr is the process's plain-HTTP metrics address on loopback.
	MetricsAddr string
	// Timeout bounds the wait for the process's workers.
	Timeout time.Duration
	// PeakEvery, when set, samples VmRSS at that interval from the start
	// on (see Process.PeakRSS).
	PeakEvery time.Duration
	// ReadyLog is the log text Start waits for; empty: "Starting workers"
	// (a follower replica never starts its workers).
	ReadyLog string
}

// Process is a controller process the harness started.
type Process struct {
	// Command is the command line, after Env's assignments.
	Command []string
	// LogFile holds the process's stdout and stderr.
	LogFile string

	cmd         *exec.Cmd
	metricsAddr string
	exited      chan error

	mu       sync.Mutex
	peakRSS  int64
	done     chan struct{}
	stopOnce sync.Once
}

// Start starts the process and waits until its workers run (controller-runtime
// logs "Starting workers" once the informers have synced).
func Start(ctx context.Context, c Command) (*Process, error) {
	p := &Process{metricsAddr: c.MetricsAddr, LogFile: filepath.Join(c.Dir, "controller.log"),
		exited: make(chan error, 1), done: make(chan struct{})}
	p.Command = append(append([]string{}, c.Env...), append([]string{c.Bin}, c.Args...)...)
	out, err := os.Create(p.LogFile)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(c.Bin, c.Args...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.Env = append(CleanEnv(), c.Env...)
	if err := p.cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	go func() {
		p.exited <- p.cmd.Wait()
		out.Close()
	}()
	if c.PeakEvery > 0 {
		go p.samplePeak(c.PeakEvery)
	}
	Logf("started %s (pid %d), log %s", strings.Join(p.Command, " "), p.Pid(), p.LogFile)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, c.Timeout, true, func(context.Context) (bool, error) {
		if err := p.Running(); err != nil {
			return false, err
		}
		data, _ := os.ReadFile(p.LogFile)
		return strings.Contains(string(data), cmp.Or(c.ReadyLog, "Starting workers")), nil
	})
	if err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// samplePeak reads VmRSS every interval until Stop (VmHWM is the kernel's
// own peak; this is a cross-check).
func (p *Process) samplePeak(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			if rss, _, err := ProcMemory(p.Pid()); err == nil {
				p.mu.Lock()
				p.peakRSS = max(p.peakRSS, rss)
				p.mu.Unlock()
			}
		}
	}
}

// PeakRSS is the highest VmRSS the Command.PeakEvery sampler saw, in bytes.
func (p *Process) PeakRSS() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peakRSS
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Running reports an early exit as an error, with the end of the log.
func (p *Process) Running() error {
	select {
	case err := <-p.exited:
		p.exited <- err
		return fmt.Errorf("the controller process exited: %v; log:\n%s", err, Tail(p.LogFile, 40))
	default:
		return nil
	}
}

// Metrics returns the process's /metrics in Prometheus text format.
func (p *Process) Metrics() (string, error) {
	resp, err := http.Get("http://" + p.metricsAddr + "/metrics")
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

// Stop sends SIGTERM to the process and waits for it (30 s, then SIGKILL).
func (p *Process) Stop() error {
	p.stopOnce.Do(func() { close(p.done) })
	if p.Running() != nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return errors.New("the controller process did not stop on SIGTERM within 30s; killed")
	}
}

// Kill sends SIGKILL to the process (a crash, a node lost) and waits for
// it to be gone.
func (p *Process) Kill() {
	p.stopOnce.Do(func() { close(p.done) })
	if p.Running() != nil {
		return
	}
	_ = p.cmd.Process.Kill()
	err := <-p.exited
	p.exited <- err
}

// MemorySample is a controller's memory at one moment.
type MemorySample struct {
	At             string  `json:"at"`
	RSSMiB         float64 `json:"vmRSSMiB"`
	HWMMiB         float64 `json:"vmHWMMiB"`
	GoHeapInuseMiB float64 `json:"goHeapInuseMiB,omitempty"`
	GoSysMiB       float64 `json:"goSysMiB,omitempty"`
	Goroutines     int     `json:"goroutines,omitempty"`
	// CPUSeconds is the process's CPU time so far (user + system).
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
}

// Sample reads the process's VmRSS, VmHWM and CPU time from /proc and its
// Go heap, Go runtime memory and goroutines from its metrics (left zero
// when the metrics do not answer). The error is /proc's; the sample holds
// what could be read.
func (p *Process) Sample(at string) (MemorySample, error) {
	rss, hwm, err := ProcMemory(p.Pid())
	s := MemorySample{At: at, RSSMiB: MiB(rss), HWMMiB: MiB(hwm), CPUSeconds: Round3(ProcCPU(p.Pid()))}
	if text, err := p.Metrics(); err == nil {
		s.GoHeapInuseMiB = MiB(int64(MetricValue(text, "go_memstats_heap_inuse_bytes")))
		s.GoSysMiB = MiB(int64(MetricValue(text, "go_memstats_sys_bytes")))
		s.Goroutines = int(MetricValue(text, "go_goroutines"))
	}
	return s, err
}

// ProcMemory reads VmRSS and VmHWM (peak RSS) of a process, in bytes.
func ProcMemory(pid int) (rss, hwm int64, err error) {
	v, err := ProcStatus(pid, "VmRSS", "VmHWM")
	return v[0], v[1], err
}

// ProcStatus reads the given kB fields of /proc/<pid>/status (VmRSS,
// RssAnon, ...) in bytes, in the order asked (0 for a field not there).
func ProcStatus(pid int, fields ...string) ([]int64, error) {
	out := make([]int64, len(fields))
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if i := slices.Index(fields, strings.TrimSuffix(f[0], ":")); i >= 0 {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			out[i] = kb * 1024
		}
	}
	return out, nil
}

// ProcCPU is the CPU time (user + system) a process has used, in seconds
// (0 when unknown).
func ProcCPU(pid int) float64 {
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

// MetricValue sums the samples of a metric (name exactly, e.g.
// `tagsync_nodetags_pass_duration_seconds_sum`) whose labels contain every
// given `key="value"` pair, in Prometheus text format.
func MetricValue(text, name string, labels ...string) float64 {
	var sum float64
	EachSample(text, name, func(series string, v float64) {
		for _, l := range labels {
			if !strings.Contains(series, l) {
				return
			}
		}
		sum += v
	})
	return sum
}

// EachSample calls fn with the series (labels included) and value of
// every sample of the metric name in Prometheus text format.
func EachSample(text, name string, fn func(series string, v float64)) {
	for _, line := range strings.Split(text, "\n") {
		sp := strings.LastIndexByte(line, ' ')
		if line == "" || line[0] == '#' || sp < 0 {
			continue
		}
		series := line[:sp]
		if metric, _, _ := strings.Cut(series, "{"); metric != name {
			continue
		}
		if v, err := strconv.ParseFloat(line[sp+1:], 64); err == nil {
			fn(series, v)
		}
	}
}

// Label is a label's value in a series (`name{key="value",...}`).
func Label(series, key string) string {
	_, rest, ok := strings.Cut(series, key+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// FreeAddr is a free TCP address on loopback.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// StartRun starts `tagsync run` as c describes against the control plane
// env, with the flags every benchmark passes before c.Args: the control
// plane's kubeconfig (written into c.Dir), leader election off, plain
// metrics and the health probes on free loopback ports, info logs.
func StartRun(ctx context.Context, env *testenv.Env, c Command) (*Process, error) {
	kubeconfig, err := WriteKubeconfig(env, c.Dir)
	if err != nil {
		return nil, err
	}
	probeAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	if c.MetricsAddr, err = FreeAddr(); err != nil {
		return nil, err
	}
	c.Args = append([]string{"run", "--kubeconfig", kubeconfig, "--leader-elect=false",
		"--metrics-secure=false", // the harness scrapes plain HTTP on loopback
		"--metrics-bind-address", c.MetricsAddr, "--health-probe-bind-address", probeAddr,
		"--zap-log-level", "info"}, c.Args...)
	return Start(ctx, c)
}

// CleanEnv is this process's environment without AZURE_*, AWS_*,
// KUBECONFIG and the Go runtime's GOMEMLIMIT / GOGC: a controller's flags
// are its whole configuration and it runs with the runtime's defaults.
func CleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AZURE_") || strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "KUBECONFIG=") ||
			strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "GOGC=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Tail returns the last n lines of a file (the error's text when it cannot
// be read).
func Tail(path string, n int) string {
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
