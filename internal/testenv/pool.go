package testenv

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

// Pool is control planes a package's tests take turns on. A test that
// needs a cluster to itself (cluster-scoped objects that select every Node,
// say) takes one for its duration with Acquire, so up to Size such tests
// run in parallel, each alone on its plane.
type Pool struct {
	free chan *Env
	all  []*Env
}

// NewPool starts n control planes at once.
func NewPool(n int) (*Pool, error) { return NewPoolWith(n, Options{}) }

// NewPoolWith starts n control planes with opts at once.
func NewPoolWith(n int, opts Options) (*Pool, error) {
	p := &Pool{free: make(chan *Env, n), all: make([]*Env, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { p.all[i], errs[i] = NewWith(opts) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = p.Stop()
		return nil, err
	}
	for _, e := range p.all {
		p.free <- e
	}
	return p, nil
}

// Size is how many control planes the pool holds.
func (p *Pool) Size() int { return len(p.all) }

// Acquire waits for a free control plane and gives it to t until t ends
// (its cleanups registered later run before the plane is handed on).
func (p *Pool) Acquire(t testing.TB) *Env {
	t.Helper()
	e := <-p.free
	t.Cleanup(func() { p.free <- e })
	return e
}

// Stop stops every control plane.
func (p *Pool) Stop() error {
	var errs []error
	for _, e := range p.all {
		if e != nil {
			errs = append(errs, e.Stop())
		}
	}
	return errors.Join(errs...)
}

// MainPool is Main with a pool of n control planes, handed to use.
func MainPool(m *testing.M, n int, use func(*Pool)) { MainPoolWith(m, n, Options{}, use) }

// MainPoolWith is MainPool with control planes started with opts.
func MainPoolWith(m *testing.M, n int, opts Options, use func(*Pool)) {
	setTestLogger()
	p, err := NewPoolWith(n, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	use(p)
	code := m.Run()
	if err := p.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control planes:", err)
	}
	os.Exit(code)
}
