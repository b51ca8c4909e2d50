package cli

import (
	"strings"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// colouredColumns says how each coloured column colours its cells: the
// conditions by whether they are healthy, the problem counts red when not 0.
var colouredColumns = map[string]func(string) colour{
	"READY":     conditionColour(v1alpha1.ConditionReady),
	"APPROVED":  conditionColour(v1alpha1.ConditionReady),
	"APPLIED":   conditionColour(v1alpha1.ConditionReady),
	"POLICY":    conditionColour(v1alpha1.ConditionReady),
	"REQUEST":   conditionColour(v1alpha1.ConditionReady),
	"DEGRADED":  conditionColour(v1alpha1.ConditionDegraded),
	"CONFLICTS": countColour,
	"ERRORS":    countColour,
	"FAILED":    countColour,
	"PROBLEMS":  countColour,
}

// conditionColour colours a condition's status: green when healthy, red
// when not, yellow when Unknown; a cell without a condition stays plain.
func conditionColour(typ string) func(string) colour {
	good := string(healthyStatus(typ))
	return func(cell string) colour {
		switch cell {
		case good:
			return green
		case "True", "False":
			return red
		case "Unknown":
			return yellow
		}
		return ""
	}
}

// countColour colours a problem count red when it is not 0.
func countColour(cell string) colour {
	if cell != "0" && cell != "-" && cell != "" {
		return red
	}
	return ""
}

// colourTable colours the cells of the coloured columns in a table
// rendered by cli-runtime's printer (header line first, columns aligned).
// It works on the rendered text, since the printer escapes control
// characters in cells.
func colourTable(rendered string, columns []string) string {
	lines := strings.SplitAfter(rendered, "\n")
	if len(lines) == 0 {
		return rendered
	}
	starts := columnStarts(lines[0], columns)
	for i := 1; i < len(lines); i++ {
		lines[i] = colourLine(lines[i], columns, starts)
	}
	return strings.Join(lines, "")
}

// columnStarts finds where each column's header begins in the (ASCII)
// header line, searching left to right; -1 for none. The printer aligns
// cells below their header in runes.
func columnStarts(header string, columns []string) []int {
	starts := make([]int, len(columns))
	from := 0
	for i, c := range columns {
		starts[i] = -1
		if idx := strings.Index(header[from:], c); idx >= 0 {
			starts[i] = from + idx
			from = starts[i] + len(c)
		}
	}
	return starts
}

// colourLine wraps the cells of the coloured columns of one row in colour
// codes, from the right so that earlier offsets stay valid.
func colourLine(line string, columns []string, starts []int) string {
	r := []rune(line)
	for i := len(columns) - 1; i >= 0; i-- {
		rule, ok := colouredColumns[columns[i]]
		if !ok || starts[i] < 0 || starts[i] >= len(r) {
			continue
		}
		end := starts[i]
		for end < len(r) && r[end] != ' ' && r[end] != '\n' {
			end++
		}
		code := rule(string(r[starts[i]:end]))
		if code == "" {
			continue
		}
		coloured := []rune(code.paint(string(r[starts[i]:end])))
		r = append(r[:starts[i]], append(coloured, r[end:]...)...)
	}
	return string(r)
}
