package benchkit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
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

// Header is what every benchmark's results begin with; a Results type
// embeds it, so its fields sit at the top of the JSON.
type Header struct {
	// Commit is the repository's HEAD, with "+dirty" when the controller's
	// code differed from it (the numbers are of the working tree).
	Commit   string         `json:"commit"`
	Machine  Machine        `json:"machine"`
	Settings map[string]any `json:"settings"`
	// Command is the controller's command line, when it ran as its own
	// process.
	Command  []string  `json:"command,omitempty"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Goals    []Goal    `json:"goals"`

	// title names the benchmark in the report.
	title string
}

// NewHeader starts the header of a run of the benchmark title (as the
// report names it) with the given settings.
func NewHeader(title string, settings map[string]any) Header {
	return Header{Machine: NewMachine(), Started: time.Now().UTC(), Settings: settings, title: title}
}

// PrintTitle prints the report's first lines: the benchmark, commit and
// machine, the controller's command line when it ran as its own process,
// and the verdict table.
func (h *Header) PrintTitle(w io.Writer) {
	fmt.Fprintf(w, "\n%s benchmark at %s — %d CPUs (%s), %s; load average %.1f at start, %.1f at end\n",
		h.title, h.Commit, h.Machine.CPUs, h.Machine.CPUModel, h.Machine.GoVer, h.Machine.LoadStart, h.Machine.LoadEnd)
	if len(h.Command) > 0 {
		fmt.Fprintf(w, "controller: %s\n", strings.Join(h.Command, " "))
	}
	fmt.Fprintln(w)
	PrintGoals(w, h.Goals)
}

// Finish records the end of the run and the machine's load then.
func (h *Header) Finish(goals []Goal) {
	h.Finished = time.Now().UTC()
	h.Machine.LoadEnd = LoadAverage()
	h.Goals = goals
}

// Goal is one row of the verdict table.
type Goal struct {
	Goal     string `json:"goal"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

// PrintGoals prints the verdict table (GOAL, TARGET, MEASURED, MET) and a
// blank line.
func PrintGoals(w io.Writer, goals []Goal) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GOAL\tTARGET\tMEASURED\tMET")
	for _, g := range goals {
		met := "MISSED"
		if g.Met {
			met = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Goal, g.Target, g.Measured, met)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
}

// Save writes the results as indented JSON to path (the -out flag; nothing
// when it is empty) and returns runErr, joined with the write's error.
func Save(path string, results any, runErr error) error {
	if path == "" {
		return runErr
	}
	if err := writeJSON(path, results); err != nil {
		return errors.Join(runErr, err)
	}
	Logf("results written to %s", path)
	return runErr
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
