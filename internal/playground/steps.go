package playground

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Step is one scenario step: an action that changes something (in the
// cloud, on a Node), and a check that is polled until it holds or the step
// times out. Nothing sleeps to synchronise: the check decides.
type Step struct {
	// Name is what the step demonstrates, e.g. "portal edit → labels".
	Name string
	// Action makes the change; an error fails the step at once.
	Action func(ctx context.Context) error
	// Check returns a one-line summary of what it observed once the step's
	// effect holds, or an error saying what is still missing.
	Check func(ctx context.Context) (string, error)
}

// StepError says which step failed and why.
type StepError struct {
	// Index is the step's position, from 1; Total the number of steps.
	Index, Total int
	// Name is the step's name.
	Name string
	// After is how long the step ran.
	After time.Duration
	// TimedOut is true when the check did not hold within the timeout
	// (Err is then its last error), false when the action failed.
	TimedOut bool
	// Err is the cause.
	Err error
}

// Error names the step and says why it failed.
func (e *StepError) Error() string {
	if e.TimedOut {
		return fmt.Sprintf("demo step %d/%d %q failed: its check did not hold within %s: %v",
			e.Index, e.Total, e.Name, round(e.After), e.Err)
	}
	return fmt.Sprintf("demo step %d/%d %q failed: %v", e.Index, e.Total, e.Name, e.Err)
}

// Unwrap returns the cause.
func (e *StepError) Unwrap() error { return e.Err }

// pollInterval is how often a check is retried.
const pollInterval = 50 * time.Millisecond

// runner plays steps in order and prints one timeline line per step.
type runner struct {
	tl      *timeline
	timeout time.Duration
	calls   func() int // ARM requests so far (nil: not shown)
}

func newRunner(tl *timeline, timeout time.Duration, calls func() int) *runner {
	return &runner{tl: tl, timeout: timeout, calls: calls}
}

// run plays the steps and stops at the first that fails (a *StepError) or
// when ctx ends (context.Cause(ctx)).
func (r *runner) run(ctx context.Context, steps []Step) error {
	start := time.Now()
	for i, s := range steps {
		if err := r.step(ctx, s, i+1, len(steps)); err != nil {
			return err
		}
	}
	r.tl.printf("\nall %d steps held in %s\n", len(steps), round(time.Since(start)))
	return nil
}

// step runs one step: the action, then the check until it holds.
func (r *runner) step(ctx context.Context, s Step, index, total int) error {
	calls := r.callCount()
	start := time.Now()
	fail := func(timedOut bool, err error) error {
		if ctx.Err() != nil {
			timedOut, err = false, context.Cause(ctx)
		}
		se := &StepError{Index: index, Total: total, Name: s.Name, After: time.Since(start), TimedOut: timedOut, Err: err}
		if !errors.Is(err, ErrInterrupted) {
			r.tl.fail(s.Name, se)
		}
		return se
	}
	if s.Action != nil {
		if err := s.Action(ctx); err != nil {
			return fail(false, err)
		}
	}
	summary, err := poll(ctx, r.timeout, s.Check)
	if err != nil {
		var p permanentError
		if errors.As(err, &p) {
			return fail(false, p.error)
		}
		return fail(true, err)
	}
	r.tl.ok(s.Name, summary, time.Since(start), r.callCount()-calls)
	return nil
}

func (r *runner) callCount() int {
	if r.calls == nil {
		return 0
	}
	return r.calls()
}

// permanentError is a check error that waiting cannot fix (something
// happened that must not): the step fails at once.
type permanentError struct{ error }

// permanent marks err as permanent.
func permanent(err error) error { return permanentError{err} }

// poll runs check until it returns nil, ctx ends (the error is then
// context.Cause(ctx)) or timeout passes (the check's last error).
func poll(ctx context.Context, timeout time.Duration, check func(context.Context) (string, error)) (string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		summary, err := check(ctx)
		var p permanentError
		switch {
		case err == nil:
			return summary, nil
		case errors.As(err, &p):
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", context.Cause(ctx)
		case <-deadline.C:
			return "", err
		case <-tick.C:
		}
	}
}
