package cli

import (
	"io"

	"k8s.io/cli-runtime/pkg/printers"
)

// colour is an ANSI colour of the CLI's output; the zero colour is none.
// Every verb colours through it and decides with useColour.
type colour string

// The colours the verbs use.
const (
	green  colour = "\x1b[32m"
	red    colour = "\x1b[31m"
	yellow colour = "\x1b[33m"
	cyan   colour = "\x1b[36m"
)

// Terminal control sequences: the end of a colour, a cleared screen (the
// cursor at its top) and a cleared line (the cursor at its start).
const (
	ansiReset   = "\x1b[0m"
	clearScreen = "\x1b[H\x1b[2J"
	clearLine   = "\r\x1b[2K"
)

// paint wraps s in c; no colour leaves s as it is.
func (c colour) paint(s string) string {
	if c == "" {
		return s
	}
	return string(c) + s + ansiReset
}

// useColour reports whether output written to w may carry ANSI colours: only
// on a terminal, never with NO_COLOR set or TERM=dumb (cli-runtime's rules,
// the same as kubectl's).
func useColour(w io.Writer) bool { return printers.AllowsColorOutput(w) }

// isTerminal reports whether w is a terminal, where screens and spinners
// may be drawn.
func isTerminal(w io.Writer) bool { return printers.IsTerminal(w) }
