// Package eventgridtest is a test's real Azure event pipeline: armsim's
// Event Grid delivers a subscription's events over HTTP to an
// eventgrid.Webhook, which publishes them to a cloudchange.Hub, so that a
// controller under test meets the events (their claims, their order,
// their echoes) as it would on Azure.
package eventgridtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/eventgrid"
	"github.com/tagsync/tagsync/internal/testenv"
)

// waitFor is how long the pipeline's waits last.
const waitFor = time.Minute

// Pipeline is the hub, the webhook that feeds it and armsim's event
// subscription to the webhook. Build it with New, give Source to the
// controller's events options, then Subscribe.
type Pipeline struct {
	// Hub takes the webhook's changes.
	Hub     *cloudchange.Hub
	webhook *eventgrid.Webhook
	// published counts the changes the webhook published.
	published atomic.Int64
	key       string
	secret    string
}

// New returns a pipeline whose hub is built with opts; its webhook is
// built when the controller's events start Source.
func New(t testing.TB, opts cloudchange.HubOptions) *Pipeline {
	p := &Pipeline{Hub: cloudchange.NewHub(opts), key: "a-shared-secret-of-the-test-0123"}
	p.secret = filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p.secret, []byte(p.key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Source builds the webhook on a free loopback port, publishing to Hub
// (an operator.EventSource).
func (p *Pipeline) Source(cloudchange.Sink) (cloudchange.Source, error) {
	w, err := eventgrid.New(eventgrid.Config{BindAddress: "127.0.0.1:0", SecretFile: p.secret}, countingSink{p})
	p.webhook = w
	return w, err
}

// countingSink counts the changes it passes on to the hub.
type countingSink struct{ p *Pipeline }

// Publish implements cloudchange.Sink.
func (s countingSink) Publish(changes []cloudchange.Change, done func(error)) error {
	s.p.published.Add(int64(len(changes)))
	return s.p.Hub.Publish(changes, done)
}

// AwaitServing waits until the webhook listens and is healthy.
func (p *Pipeline) AwaitServing(t testing.TB) {
	t.Helper()
	testenv.Eventually(t, waitFor, "the webhook to serve", func() string {
		if p.webhook == nil || p.webhook.Addr() == "" || !p.webhook.Health().Up {
			return "the webhook is not up yet"
		}
		return ""
	})
}

// Subscribe makes armsim's Event Grid deliver env's subscription's events
// to the webhook.
func (p *Pipeline) Subscribe(t testing.TB, env *armsimtest.Env) {
	t.Helper()
	url := fmt.Sprintf("http://%s%s?%s=%s", p.webhook.Addr(), eventgrid.DefaultPath, eventgrid.KeyParameter, p.key)
	env.Subscribe(t, "tagsync", armsimtest.WebHook(url))
}

// Unsubscribe deletes the event subscription: Event Grid delivers nothing
// more, and the webhook stays up.
func (p *Pipeline) Unsubscribe(t testing.TB, env *armsimtest.Env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := env.ARM(ctx, http.MethodDelete, armsimtest.EventSubscriptionPath(env.SubscriptionID, "tagsync"), nil, nil); err != nil {
		t.Fatal(err)
	}
}

// Published is how many changes the webhook has published.
func (p *Pipeline) Published() int64 { return p.published.Load() }

// AwaitPublished waits until the webhook has published n changes in all.
func (p *Pipeline) AwaitPublished(t testing.TB, n int64) {
	t.Helper()
	testenv.Eventually(t, waitFor, fmt.Sprintf("%d changes delivered", n), func() string {
		if got := p.published.Load(); got < n {
			return fmt.Sprintf("%d changes delivered", got)
		}
		return ""
	})
}
