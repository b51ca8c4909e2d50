package playground

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/operator"
)

// controller is tagsync's controller manager (operator.New, as `tagsync
// run` builds it) running in this process.
type controller struct {
	mgr    ctrl.Manager
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done is closed
}

// newController builds the manager: no leader election, metrics and probes
// off, the given provider and event sources.
func newController(ctx context.Context, cfg *rest.Config, p cloud.Provider, ev operator.EventsOptions) (*controller, error) {
	mgr, err := operator.New(ctx, cfg, operator.Options{MetricsAddr: "0", ProbeAddr: "0", Provider: p, Events: ev})
	if err != nil {
		return nil, err
	}
	return &controller{mgr: mgr}, nil
}

// start runs the manager until stop; failed is called if it stops on its
// own with an error.
func (c *controller) start(ctx context.Context, failed func(error)) {
	ctx, c.cancel = context.WithCancel(ctx)
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		c.err = c.mgr.Start(ctx)
		if ctx.Err() == nil {
			if c.err == nil {
				c.err = errors.New("it returned without being asked to")
			}
			failed(fmt.Errorf("the controller manager stopped: %w", c.err))
		}
	}()
}

// stop stops the manager and waits for it.
func (c *controller) stop() error {
	if c == nil || c.cancel == nil {
		return nil
	}
	c.cancel()
	<-c.done
	c.cancel = nil
	if c.err != nil && !errors.Is(c.err, context.Canceled) {
		return fmt.Errorf("stopping the controller manager: %w", c.err)
	}
	return nil
}

// setLogger sends controller-runtime's and client-go's logs to w, one line
// per entry with a timestamp, at verbosity 1 (the controller's pass
// summaries).
func setLogger(w io.Writer) {
	var mu sync.Mutex
	l := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		if prefix != "" {
			fmt.Fprintf(w, "%s: %s\n", prefix, args)
			return
		}
		fmt.Fprintln(w, args)
	}, funcr.Options{LogTimestamp: true, Verbosity: 1})
	ctrl.SetLogger(l)
	klog.SetLogger(l)
}
