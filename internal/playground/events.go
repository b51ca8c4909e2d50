package playground

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/eventgrid"
	"github.com/tagsync/tagsync/internal/operator"
)

// eventSubscription is the name of the Event Grid event subscription the
// demo creates in armsim.
const eventSubscription = "tagsync-demo"

// eventWebhook is the controller's Event Grid webhook: plain HTTP on a
// loopback port chosen when the controller starts, deliveries
// authenticated by a shared secret in the URL.
type eventWebhook struct {
	key string

	mu sync.Mutex
	w  *eventgrid.Webhook
}

// newEventWebhook writes a fresh shared secret into dir and returns the
// webhook and the events options that make the controller serve it.
func newEventWebhook(dir string) (*eventWebhook, operator.EventsOptions, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, operator.EventsOptions{}, err
	}
	e := &eventWebhook{key: hex.EncodeToString(b)}
	file := filepath.Join(dir, "events-webhook-secret")
	if err := os.WriteFile(file, []byte(e.key+"\n"), 0o600); err != nil {
		return nil, operator.EventsOptions{}, fmt.Errorf("writing the webhook's secret: %w", err)
	}
	cfg := eventgrid.Config{BindAddress: "127.0.0.1:0", SecretFile: file}
	source := func(sink cloudchange.Sink) (cloudchange.Source, error) {
		w, err := eventgrid.New(cfg, sink)
		e.mu.Lock()
		e.w = w
		e.mu.Unlock()
		return w, err
	}
	return e, operator.EventsOptions{Sources: []operator.EventSource{source}}, nil
}

// url is the delivery URL, key included, once the webhook serves; "" before.
func (e *eventWebhook) url() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.w == nil || e.w.Addr() == "" {
		return ""
	}
	return "http://" + e.w.Addr() + eventgrid.DefaultPath + "?" + eventgrid.KeyParameter + "=" + e.key
}

// subscribe creates the event subscription that delivers every ARM event
// of the demo's subscription to the webhook, once it serves, and waits
// until the event of its own creation is delivered. ARM's PUT returns
// after the webhook passed Event Grid's validation handshake.
func (pg *playground) subscribe(ctx context.Context) error {
	url, err := poll(ctx, pg.opts.StepTimeout, func(context.Context) (string, error) {
		if u := pg.events.url(); u != "" {
			return u, nil
		}
		return "", errors.New("the controller's Event Grid webhook does not serve")
	})
	if err != nil {
		return err
	}
	env, err := armsimtest.NewEnv(pg.sim, subscriptionID)
	if err != nil {
		return err
	}
	if _, err := env.PutEventSubscription(ctx, eventSubscription, armsimtest.WebHook(url)); err != nil {
		return fmt.Errorf("creating the event subscription: %w", err)
	}
	// The subscription's own creation is an ARM write: let its event go
	// first, so that it does not count against the edit.
	ctx, cancel := context.WithTimeout(ctx, pg.opts.StepTimeout)
	defer cancel()
	if err := pg.sim.WaitEventGridIdle(ctx); err != nil {
		return fmt.Errorf("the event of the Event Grid subscription's creation was not delivered: %w", err)
	}
	return nil
}

// eventEdit changes a scale set's tag out of band, as the Azure portal
// does, and asks for nothing: Event Grid delivers the write to the
// webhook and a targeted pass reads that scale set alone. The summary
// gives the time from the edit to the last label, the ARM reads of single
// resources in between and the polling reads (lists and searches, what a
// full pass makes).
func (pg *playground) eventEdit() Step {
	r := pg.layout.Pool2
	key := pg.labelKey("tier")
	var edited time.Time
	var before armsim.Calls
	return Step{
		Name: "portal edit → event → labels",
		Action: func(ctx context.Context) error {
			if err := pg.subscribe(ctx); err != nil {
				return err
			}
			before, edited = pg.sim.Calls(), time.Now()
			return pg.sim.SetTags(r.ID, map[string]string{"tier": "gold"})
		},
		Check: func(ctx context.Context) (string, error) {
			for _, n := range pg.layout.nodesOf(r) {
				if err := pg.labelIs(ctx, n, key, "gold"); err != nil {
					return "", err
				}
			}
			took := time.Since(edited)
			gets, lists := readsSince(before, pg.sim.Calls())
			return fmt.Sprintf("portal sets tier=gold on %s, no sync asked → Event Grid → %s=gold on its %d nodes in %s (%s, %s)",
				r.Name, key, len(pg.layout.nodesOf(r)), round(took), plural(gets, "ARM read"), plural(lists, "polling read")), nil
		},
	}
}

// readsSince counts the ARM reads served since before: gets of one
// resource, and lists and searches (what polling makes).
func readsSince(before, now armsim.Calls) (gets, lists int) {
	for _, op := range now.Ops() {
		n := now.Count(op) - before.Count(op)
		_, method, _ := strings.Cut(op, ".")
		switch {
		case strings.HasPrefix(op, "Identity.") || strings.HasPrefix(op, "EventSubscriptions."):
		case strings.HasPrefix(method, "Get"):
			gets += n
		case strings.HasPrefix(method, "List") || op == "ResourceGraph.Resources":
			lists += n
		}
	}
	return gets, lists
}
