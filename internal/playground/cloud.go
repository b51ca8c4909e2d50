package playground

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/azure"
)

// Credentials the controller presents to armsim's token service. armsim
// accepts any; they are not secrets.
const (
	demoClientID     = "7a3c0f52-0000-4000-8000-00000000d3e0"
	demoClientSecret = "armsim-demo-secret"
)

// startArmsim starts the ARM simulator over HTTPS on a free loopback port,
// its CA certificate in dir. logs, when not nil, receives one line per
// request.
func startArmsim(dir string, logs io.Writer) (*armsim.Server, error) {
	o := armsim.Options{TLS: true, CADir: dir}
	if logs != nil {
		o.Logf = func(format string, args ...any) { fmt.Fprintf(logs, format+"\n", args...) }
	}
	s, err := armsim.New(o)
	if err != nil {
		return nil, fmt.Errorf("creating the ARM simulator: %w", err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("starting the ARM simulator: %w", err)
	}
	return s, nil
}

// newProvider builds the Azure provider exactly as `tagsync run` would for a
// custom cloud, pointed at s: ARM endpoint, audience and authority host are
// armsim's URL, the HTTP client trusts its CA, and azidentity's
// client-secret credential gets real tokens from its token service.
func newProvider(ctx context.Context, s *armsim.Server, subscription string) (*azure.Provider, error) {
	cfg := azure.Config{
		ARMEndpoint:         s.URL(),
		ARMAudience:         s.URL(),
		DefaultSubscription: subscription,
		HTTPClient:          s.HTTPClient(),
		Auth: azure.AuthConfig{
			Mode:          azure.AuthClientSecret,
			TenantID:      s.TenantID(),
			ClientID:      demoClientID,
			ClientSecret:  demoClientSecret,
			AuthorityHost: s.URL(),
		},
	}
	set := &azure.Settings{Config: cfg,
		Options: []azure.Option{azure.WithRetry(azure.Retry{MaxRetries: 3, RetryDelay: 50 * time.Millisecond, MaxRetryDelay: 2 * time.Second})}}
	if err := set.Complete(); err != nil {
		return nil, fmt.Errorf("building the Azure provider for armsim: %w", err)
	}
	p, err := set.NewProvider(ctx, cloud.ProviderOptions{})
	if err != nil {
		return nil, fmt.Errorf("building the Azure provider for armsim: %w", err)
	}
	return p.(*azure.Provider), nil
}

// gatedProvider is the controller's Azure provider with a gate the scenario
// can close: while closed, the controller's next cloud read waits. It lets
// the scenario make two changes "during one sync pass" deterministically,
// as a slow ARM read would, without sleeping.
type gatedProvider struct {
	*azure.Provider

	mu   sync.Mutex
	gate *gate
}

// gate is one closed period of a gatedProvider.
type gate struct {
	held     chan struct{} // closed when a read is waiting
	open     chan struct{} // closed by release
	heldOnce sync.Once
}

// hold closes the gate: the next Snapshot waits until release is called.
// held is closed once a Snapshot is waiting.
func (g *gatedProvider) hold() (held <-chan struct{}, release func()) {
	gt := &gate{held: make(chan struct{}), open: make(chan struct{})}
	g.mu.Lock()
	g.gate = gt
	g.mu.Unlock()
	var once sync.Once
	return gt.held, func() {
		once.Do(func() {
			g.mu.Lock()
			if g.gate == gt {
				g.gate = nil
			}
			g.mu.Unlock()
			close(gt.open)
		})
	}
}

// Snapshot waits while the gate is closed, then reads.
func (g *gatedProvider) Snapshot(ctx context.Context, nodes []cloud.Node, opts cloud.ReadOptions) (cloud.Snapshot, error) {
	g.mu.Lock()
	gt := g.gate
	g.mu.Unlock()
	if gt != nil {
		gt.heldOnce.Do(func() { close(gt.held) })
		select {
		case <-gt.open:
		case <-ctx.Done():
			return cloud.Snapshot{}, ctx.Err()
		}
	}
	return g.Provider.Snapshot(ctx, nodes, opts)
}
