package benchkit

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Machine describes where the numbers were taken.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpuModel"`
	MemMiB   int    `json:"memoryMiB"`
	GoVer    string `json:"go"`
	OS       string `json:"os"`
	// Load averages (1 min) when the run started and ended: the machine
	// may be shared, and kube-apiserver, etcd, the simulated clouds, the
	// harness and the controller all compete for its CPUs.
	LoadStart float64 `json:"loadAverageStart"`
	LoadEnd   float64 `json:"loadAverageEnd"`
}

// NewMachine describes this machine, with the load average now as LoadStart,
// and logs it.
func NewMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVer: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, LoadStart: LoadAverage()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var kb int
			if _, err := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kb); err == nil {
				m.MemMiB = kb / 1024
				break
			}
		}
		f.Close()
	}
	Logf("machine: %d CPUs (GOMAXPROCS %d), %s, load average %.1f", m.CPUs, runtime.GOMAXPROCS(0), m.CPUModel, m.LoadStart)
	return m
}

// LoadAverage is the 1-minute load average (0 when unknown).
func LoadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	_, _ = fmt.Sscanf(string(data), "%f", &l)
	return l
}

// Commit describes the working tree at root that the benchmark measures:
// HEAD's short hash, with "+dirty" when the controller's code (internal,
// cmd, api, go.mod) differs from it; "unknown" without git.
func Commit(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	dirty, err := exec.Command("git", "-C", root, "status", "--porcelain", "--", "internal", "cmd", "api", "go.mod").Output()
	if err == nil && len(strings.TrimSpace(string(dirty))) > 0 {
		c += "+dirty"
	}
	Logf("measuring commit %s", c)
	return c
}
