package eventgrid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"
)

// probeOriginPrefix starts the WebHook-Request-Origin of a probe; the rest
// is a nonce the answer must echo.
const probeOriginPrefix = "tagsync-probe."

// probeState is what the probes found: failures in a row, the last error.
type probeState struct {
	failures int
	last     string
	since    time.Time
}

// probeLoop checks PublicURL every ProbeInterval until ctx ends (Start
// runs it when a PublicURL is configured), while this replica leads: only
// the leader's hub reads the health, and one prober is enough.
func (w *Webhook) probeLoop(ctx context.Context) {
	tick := time.NewTicker(w.cfg.ProbeInterval)
	defer tick.Stop()
	for {
		if w.leader() {
			w.recordProbe(w.probe(ctx))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// probe sends the abuse-protection handshake to the public endpoint with a
// fresh origin and checks that a webhook answered it: 200 with that origin
// allowed. A proxy's error page, a default backend or a stale DNS name does
// not echo it.
func (w *Webhook) probe(ctx context.Context) error {
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	origin := probeOriginPrefix + hex.EncodeToString(nonce)
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodOptions, w.cfg.PublicURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("WebHook-Request-Origin", origin)
	resp, err := w.cfg.ProbeClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("answered %s", resp.Status)
	case resp.Header.Get("WebHook-Allowed-Origin") != origin:
		return fmt.Errorf("answered 200 without allowing the probe's origin: not this webhook")
	}
	return nil
}

// recordProbe records a probe's outcome.
func (w *Webhook) recordProbe(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := &w.probed
	wasDown := p.failures >= ProbeFailures
	if err == nil {
		p.failures, p.last = 0, ""
		publicUp.WithLabelValues().Set(1)
		if wasDown {
			w.log.Info("the public endpoint reaches the webhook again", "url", w.cfg.PublicURL)
		}
		return
	}
	if p.failures == 0 {
		p.since = w.now()
	}
	p.failures++
	p.last = err.Error()
	probeFailuresTotal.WithLabelValues().Inc()
	if p.failures >= ProbeFailures {
		publicUp.WithLabelValues().Set(0)
		if !wasDown {
			w.log.Info("WARNING: the public endpoint does not reach the webhook: Event Grid's deliveries cannot arrive",
				"url", w.cfg.PublicURL, "probes", p.failures, "error", p.last)
		}
	}
}

// probeDown is the reason the probes take the source down, "" while they
// do not (the caller holds w.mu).
func (w *Webhook) probeDown() string {
	p := w.probed
	if p.failures < ProbeFailures {
		return ""
	}
	return fmt.Sprintf("the public endpoint %s does not reach the webhook (%d probes in a row since %s): %s",
		w.cfg.PublicURL, p.failures, p.since.UTC().Format(time.RFC3339), p.last)
}
