package playground

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/tagsync/tagsync/internal/armsim"
)

// timeline prints what happens, each line stamped with the time since the
// demo started.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func newTimeline(w io.Writer, start time.Time) *timeline { return &timeline{w: w, start: start} }

// printf prints unstamped text.
func (t *timeline) printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, format, args...)
}

// line prints a stamped line with a marker (· setup, ✓ held, ✗ failed).
func (t *timeline) line(mark, format string, args ...any) {
	t.printf("[%5.1fs] %s %s\n", time.Since(t.start).Seconds(), mark, fmt.Sprintf(format, args...))
}

// note prints a setup line.
func (t *timeline) note(format string, args ...any) { t.line("·", format, args...) }

// detailIndent lines a step's detail up under its name.
const detailIndent = "           "

// ok prints a step that held, how long it took to converge and how many
// ARM requests it caused, then what it observed.
func (t *timeline) ok(name, summary string, took time.Duration, calls int) {
	t.line("✓", "%s (%s, %s)", name, round(took), plural(calls, "ARM call"))
	t.printf("%s%s\n", detailIndent, summary)
}

// fail prints a step that did not hold, and why.
func (t *timeline) fail(name string, e *StepError) {
	if e.TimedOut {
		t.line("✗", "%s (not converged after %s)", name, round(e.After))
	} else {
		t.line("✗", "%s (failed after %s)", name, round(e.After))
	}
	t.printf("%s%v\n", detailIndent, e.Err)
}

// round renders a duration as milliseconds below a second, else as seconds
// with one decimal.
func round(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// report prints the final state: Nodes × labels, resources × tags, the
// NodeTagSync's status and the ARM calls made.
func (pg *playground) report() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := pg.opts.Out
	fmt.Fprintln(w)
	if err := pg.nodeTable(ctx, w); err != nil {
		fmt.Fprintf(w, "(cannot list the Nodes: %v)\n", err)
	}
	fmt.Fprintln(w)
	pg.tagTable(w)
	fmt.Fprintln(w)
	pg.callTable(w)
	if s, err := pg.syncStatus(ctx); err == nil {
		fmt.Fprintf(w, "\nNodeTagSync %q: %s\n", syncName, s)
	}
	if s, err := pg.metadataStatus(ctx); err == nil {
		fmt.Fprintf(w, "CloudMetadata %s/%s: %s\n", metadataNS, metadataName, s)
	}
	if s, err := pg.labelSyncStatus(ctx); err == nil {
		fmt.Fprintf(w, "LabelSyncProfile %s/%s: %s\n", metalNS, rackProfile, s)
	}
}

// nodeTable prints each Node's synced labels, one column per label.
func (pg *playground) nodeTable(ctx context.Context, w io.Writer) error {
	labels, err := pg.managedLabels(ctx)
	if err != nil {
		return err
	}
	var rows []row
	for _, n := range pg.layout.Nodes {
		name := n.Name
		if n.Resource == nil {
			name += " (on-prem)"
		}
		rows = append(rows, row{name: name, cells: trimPrefix(labels[n.Name], pg.codec.Prefix+"/")})
	}
	fmt.Fprintf(w, "Node labels (%s/<column>):\n", pg.codec.Prefix)
	printMatrix(w, "NODE", nil, rows)
	return nil
}

// tagTable prints each resource's tags, one column per tag name.
func (pg *playground) tagTable(w io.Writer) {
	var rows []row
	for _, r := range pg.layout.resources() {
		t, err := pg.sim.Tags(r.ID)
		if err != nil {
			t = map[string]string{"?": err.Error()}
		}
		rows = append(rows, row{name: r.Name, extra: r.Kind, cells: t})
	}
	fmt.Fprintln(w, "Azure tags (armsim):")
	printMatrix(w, "RESOURCE", []string{"KIND"}, rows)
}

// row is one line of a matrix: a name, fixed columns, and named cells.
type row struct {
	name, extra string
	cells       map[string]string
}

// printMatrix prints rows with one column per cell name (sorted
// case-insensitively); absent cells print "-".
func printMatrix(w io.Writer, first string, fixed []string, rows []row) {
	seen := map[string]bool{}
	var cols []string
	for _, r := range rows {
		for k := range r.cells {
			if !seen[k] {
				seen[k] = true
				cols = append(cols, k)
			}
		}
	}
	sort.Slice(cols, func(i, j int) bool { return strings.ToLower(cols[i]) < strings.ToLower(cols[j]) })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  "+strings.Join(slices.Concat([]string{first}, fixed, cols), "\t"))
	for _, r := range rows {
		line := []string{r.name}
		if len(fixed) > 0 {
			line = append(line, r.extra)
		}
		for _, c := range cols {
			v, ok := r.cells[c]
			if !ok {
				v = "-"
			}
			line = append(line, v)
		}
		fmt.Fprintln(tw, "  "+strings.Join(line, "\t"))
	}
	_ = tw.Flush()
}

// callTable prints the ARM requests armsim served, by operation and status.
func (pg *playground) callTable(w io.Writer) {
	calls := pg.sim.Calls()
	fmt.Fprintln(w, "ARM requests served by armsim (the controller's whole run):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  OPERATION\tCALLS\tSTATUS")
	total, throttled := 0, 0
	for _, op := range calls.Ops() {
		c := calls[op]
		total += c.Total
		throttled += c.ByStatus[429]
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", op, c.Total, statuses(c))
	}
	fmt.Fprintf(tw, "  total\t%d\t%d throttled (429)\n", total, throttled)
	_ = tw.Flush()
}

// statuses renders counts by status: "200×5 404×1".
func statuses(c armsim.OpCalls) string {
	codes := make([]int, 0, len(c.ByStatus))
	for code := range c.ByStatus {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	parts := make([]string, len(codes))
	for i, code := range codes {
		parts[i] = fmt.Sprintf("%d×%d", code, c.ByStatus[code])
	}
	return strings.Join(parts, " ")
}

// trimPrefix returns m with prefix removed from its keys.
func trimPrefix(m map[string]string, prefix string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[strings.TrimPrefix(k, prefix)] = v
	}
	return out
}
