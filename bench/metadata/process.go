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
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// process is `tagsync run` in its own process, with a sampler of its memory.
type process struct {
	cmd         *exec.Cmd
	metricsAddr string
	logFile     string
	command     []string
	exited      chan error

	mu      sync.Mutex
	peakRSS int64 // highest VmRSS seen by the sampler
	done    chan struct{}
}

// launch starts the controller and waits until its workers run.
func launch(ctx context.Context, bin string, args []string, dir, metricsAddr string, timeout time.Duration) (*process, error) {
	p := &process{metricsAddr: metricsAddr, logFile: filepath.Join(dir, "controller.log"), exited: make(chan error, 1), done: make(chan struct{})}
	p.command = append([]string{bin}, args...)
	out, err := os.Create(p.logFile)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.Env = cleanEnv()
	if err := p.cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	go func() {
		p.exited <- p.cmd.Wait()
		out.Close()
	}()
	go p.sample()
	logf("started %s (pid %d), log %s", strings.Join(p.command, " "), p.pid(), p.logFile)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if err := p.running(); err != nil {
			return false, err
		}
		data, _ := os.ReadFile(p.logFile)
		return strings.Contains(string(data), "Starting workers"), nil
	})
	if err != nil {
		_ = p.stop()
		return nil, err
	}
	return p, nil
}

// sample reads VmRSS every 200 ms (VmHWM is the kernel's own peak; this
// is a cross-check).
func (p *process) sample() {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			if rss, _, err := procMemory(p.pid()); err == nil {
				p.mu.Lock()
				p.peakRSS = max(p.peakRSS, rss)
				p.mu.Unlock()
			}
		}
	}
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// running reports an early exit as an error.
func (p *process) running() error {
	select {
	case err := <-p.exited:
		p.exited <- err
		return fmt.Errorf("the controller process exited: %v; log:\n%s", err, tail(p.logFile, 40))
	default:
		return nil
	}
}

// metrics returns the controller's /metrics in Prometheus text format.
func (p *process) metrics() (string, error) {
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

// memory samples the process now.
func (p *process) memory(at string) MemorySample {
	rss, hwm, _ := procMemory(p.pid())
	s := MemorySample{At: at, RSSMiB: mib(rss), HWMMiB: mib(hwm), CPUSeconds: round3(procCPU(p.pid()))}
	if text, err := p.metrics(); err == nil {
		s.GoHeapInuseMiB = mib(int64(metricValue(text, "go_memstats_heap_inuse_bytes")))
		s.Goroutines = int(metricValue(text, "go_goroutines"))
	}
	return s
}

// stop sends SIGTERM to the process this harness started and waits.
func (p *process) stop() error {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	if p.running() != nil {
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

// metricValue sums the samples of a metric whose labels contain every
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

// cloudCalls is the controller's cloud requests of one provider by
// operation (tagsync_cloud_requests_total), all status codes.
func cloudCalls(text, provider string) map[string]int {
	out := map[string]int{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "tagsync_cloud_requests_total{") || !strings.Contains(line, `provider="`+provider+`"`) {
			continue
		}
		_, rest, _ := strings.Cut(line, `operation="`)
		op, _, _ := strings.Cut(rest, `"`)
		sp := strings.LastIndexByte(line, ' ')
		v, _ := strconv.ParseFloat(line[sp+1:], 64)
		out[op] += int(v)
	}
	return out
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// cleanEnv is the environment without AZURE_*, AWS_* (AWS_CA_BUNDLE
// included: moto is plain HTTP), KUBECONFIG and the Go runtime's
// GOMEMLIMIT / GOGC: the flags are the whole configuration and the process
// runs with the runtime's defaults.
func cleanEnv() []string {
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
