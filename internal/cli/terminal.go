package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progressDelay is how long work runs before the progress display appears:
// quick work shows nothing.
const progressDelay = 300 * time.Millisecond

// progress is a spinner on a terminal's line saying what is being waited
// for. It draws only when its writer is a terminal; stop clears it.
type progress struct {
	w    io.Writer
	what string
	done chan struct{}
	wg   sync.WaitGroup
}

// startProgress shows "what..." with a spinner on w (standard error) while
// the caller works, after progressDelay, if w is a terminal. Call stop when
// the work ends.
func startProgress(w io.Writer, what string) *progress {
	p := &progress{w: w, what: what, done: make(chan struct{})}
	if !isTerminal(w) {
		return p
	}
	p.wg.Go(p.spin)
	return p
}

// spin draws the spinner until stop.
func (p *progress) spin() {
	select {
	case <-p.done:
		return
	case <-time.After(progressDelay):
	}
	frames := `|/-\`
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		fmt.Fprintf(p.w, "\r%c %s...", frames[i%len(frames)], p.what)
		select {
		case <-p.done:
			fmt.Fprint(p.w, clearLine)
			return
		case <-tick.C:
		}
	}
}

// stop ends the display and clears its line; it is safe to call twice.
func (p *progress) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.wg.Wait()
}
