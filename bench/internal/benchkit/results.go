package benchkit

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

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
