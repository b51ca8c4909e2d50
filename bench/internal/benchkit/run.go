package benchkit

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Flags are the flags every benchmark has.
type Flags struct {
	// Scenarios is the comma-separated -scenarios list.
	Scenarios string
	// Out is where the JSON results go (empty: nowhere).
	Out string
	// Tagsync is the binary to measure (empty: built from the tree).
	Tagsync string
	// Timeout bounds any single wait.
	Timeout time.Duration
}

// Register defines -scenarios, -out (bench/results/<name>.json), -tagsync
// and -timeout with the benchmark's defaults.
func (f *Flags) Register(name, scenarios, scenariosHelp string, timeout time.Duration) {
	flag.StringVar(&f.Scenarios, "scenarios", scenarios, scenariosHelp)
	flag.StringVar(&f.Out, "out", "bench/results/"+name+".json", "where to write the JSON results (empty: do not write)")
	flag.StringVar(&f.Tagsync, "tagsync", "", "tagsync binary to measure (default: go build ./cmd/tagsync into a temporary directory)")
	flag.DurationVar(&f.Timeout, "timeout", timeout, "give up on any single wait after this long")
}

// Has reports whether -scenarios names s.
func (f Flags) Has(s string) bool { return Has(f.Scenarios, s) }

// Step is one scenario of a benchmark.
type Step struct {
	// Name is the scenario's name in -scenarios and in its error.
	Name string
	// After names the memory sample taken when the step is done.
	After string
	Run   func(context.Context) error
}

// RunSteps runs the steps -scenarios names, in order, and calls sample
// with the step's After once each is done.
func (f Flags) RunSteps(ctx context.Context, steps []Step, sample func(at string)) error {
	for _, s := range steps {
		if !f.Has(s.Name) {
			continue
		}
		if err := s.Run(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		sample(s.After)
	}
	return nil
}

// Bench is one benchmark as Run drives it.
type Bench interface {
	// Start brings up what the scenarios run against and returns the
	// repository's root; Close undoes what started, also after an error.
	Start(ctx context.Context) (root string, err error)
	Scenarios(ctx context.Context) error
	Close()
	// Results are what the scenarios measured; they embed Header.
	Results() Results
	// Goals are the verdicts over the results.
	Goals() []Goal
	// Report prints what the verdict table does not say.
	Report(w io.Writer)
}

// Results is a benchmark's results type: it embeds Header.
type Results interface {
	Head() *Header
}

// Head is the header itself (Results types have it through embedding).
func (h *Header) Head() *Header { return h }

// Main runs the benchmark until it is done or the process is interrupted
// (SIGINT, SIGTERM), and exits with status 1 on an error.
func Main(out string, b Bench) {
	run(func(ctx context.Context) error { return Run(ctx, out, b) })
}

// Run starts the benchmark, records the commit measured, runs its
// scenarios, ends the header with the verdicts, prints the report on
// stdout and writes the results as JSON to out (when set). Nothing is
// written when Start fails.
func Run(ctx context.Context, out string, b Bench) error {
	defer b.Close()
	root, err := b.Start(ctx)
	if err != nil {
		return err
	}
	h := b.Results().Head()
	h.Commit = Commit(root)
	runErr := b.Scenarios(ctx)
	h.Finish(b.Goals())
	h.PrintTitle(os.Stdout)
	b.Report(os.Stdout)
	err = Save(out, b.Results(), runErr)
	if s, ok := b.(Strict); ok && s.FailsOnMissedGoals() {
		err = errors.Join(err, Missed(h.Goals))
	}
	return err
}

// Strict is a Bench whose run fails (exit status 1, after the report and
// the JSON) when its verdict misses a goal.
type Strict interface {
	FailsOnMissedGoals() bool
}

// Missed returns an error naming the goals not met, nil when all were.
func Missed(goals []Goal) error {
	var missed []string
	for _, g := range goals {
		if !g.Met {
			missed = append(missed, fmt.Sprintf("%s (target %s, measured %s)", g.Goal, g.Target, g.Measured))
		}
	}
	if len(missed) == 0 {
		return nil
	}
	return fmt.Errorf("%d goals missed: %s", len(missed), strings.Join(missed, "; "))
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

// Memory is the memory goal of a controller process that serves every
// scenario of a run.
type Memory struct {
	Scenarios string         `json:"scenarios"`
	Samples   []MemorySample `json:"samples"`
	// RSSMiB is VmRSS settled at the end, PeakRSSMiB VmHWM.
	RSSMiB     float64 `json:"rssMiB"`
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// SampledPeakMiB is the highest VmRSS of the 200 ms sampler.
	SampledPeakMiB float64 `json:"sampledPeakMiB"`
	GoalMiB        float64 `json:"goalMiB"`
	Met            bool    `json:"met"`
}

// Settle lets memory settle for 10 s (nothing is awaited), takes the last
// sample and judges: the peak and the settled VmRSS both within the goal.
func (m *Memory) Settle(p *Process, scenarios string, sample func(at string) MemorySample) {
	time.Sleep(10 * time.Second)
	last := sample("10 s later (settled)")
	m.RSSMiB, m.PeakRSSMiB = last.RSSMiB, last.HWMMiB
	m.SampledPeakMiB = MiB(p.PeakRSS())
	m.Scenarios = scenarios
	m.Met = m.PeakRSSMiB <= m.GoalMiB && m.RSSMiB <= m.GoalMiB
}

// PrintSamples prints memory samples, one a line, the moment padded to
// width.
func PrintSamples(w io.Writer, width int, samples []MemorySample) {
	for _, s := range samples {
		fmt.Fprintf(w, "  %-*s VmRSS %6.1f MiB  VmHWM %6.1f MiB  Go heap in use %6.1f MiB  CPU %5.1fs  goroutines %d\n",
			width, s.At, s.RSSMiB, s.HWMMiB, s.GoHeapInuseMiB, s.CPUSeconds, s.Goroutines)
	}
}
