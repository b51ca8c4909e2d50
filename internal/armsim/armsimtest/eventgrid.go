package armsimtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tagsync/tagsync/internal/armsim"
)

// EventGridAPIVersion is the api-version the helpers send.
const EventGridAPIVersion = "2025-02-15"

// WithRetrySchedule makes failed deliveries retry after these waits
// instead of Event Grid's 10 s, 30 s, 1 min, ...
func WithRetrySchedule(waits ...time.Duration) Option {
	return func(o *armsim.Options) { o.EventGrid.RetrySchedule = waits }
}

// WithWebhookClient makes Event Grid's handshakes and deliveries go
// through c, e.g. an httptest TLS server's Client().
func WithWebhookClient(c *http.Client) Option {
	return func(o *armsim.Options) { o.EventGrid.Client = c }
}

// WebHook is an event subscription delivering every event to url in the
// Event Grid schema, with Event Grid's defaults for the rest; change the
// fields a test needs before Subscribe.
func WebHook(url string) armsim.EventSubscriptionProperties {
	return armsim.EventSubscriptionProperties{Destination: &armsim.EventSubscriptionDestination{
		EndpointType: armsim.EndpointWebHook, Properties: armsim.WebHookDestination{EndpointURL: url},
	}}
}

// Subscribe creates or updates the Event Grid event subscription name on
// the env's subscription through ARM, as a deployment would, and fails the
// test if ARM refuses it (e.g. the endpoint failed the handshake).
func (e *Env) Subscribe(t testing.TB, name string, props armsim.EventSubscriptionProperties) armsim.EventSubscription {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	es, err := e.PutEventSubscription(ctx, name, props)
	if err != nil {
		t.Fatalf("event subscription %s: %v", name, err)
	}
	return es
}

// PutEventSubscription is Subscribe's request: ARM's answer, or its
// refusal as an *armsim.Error.
func (e *Env) PutEventSubscription(ctx context.Context, name string, props armsim.EventSubscriptionProperties) (armsim.EventSubscription, error) {
	body, err := json.Marshal(armsim.EventSubscription{Properties: props})
	if err != nil {
		return armsim.EventSubscription{}, err
	}
	var es armsim.EventSubscription
	return es, e.ARM(ctx, http.MethodPut, EventSubscriptionPath(e.SubscriptionID, name), body, &es)
}

// EventSubscriptionPath is the ARM path of an event subscription on a
// subscription.
func EventSubscriptionPath(subscriptionID, name string) string {
	return "/subscriptions/" + subscriptionID + "/providers/Microsoft.EventGrid/eventSubscriptions/" + name
}

// ARM sends one request to the server's management plane with the env's
// credential (api-version EventGridAPIVersion unless path has one) and
// decodes a 2xx JSON answer into out (if not nil); any other status is
// returned as an *armsim.Error.
func (e *Env) ARM(ctx context.Context, method, path string, body []byte, out any) error {
	tok, err := e.Credential.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{e.Server.URL() + "/.default"}})
	if err != nil {
		return err
	}
	if !strings.Contains(path, "api-version=") {
		path += "?api-version=" + EventGridAPIVersion
	}
	req, err := http.NewRequestWithContext(ctx, method, e.Server.URL()+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return armError(resp.StatusCode, data)
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	return json.Unmarshal(data, out)
}

// armError turns an ARM error answer into an *armsim.Error.
func armError(status int, body []byte) error {
	var b struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return fmt.Errorf("status %d: %s", status, body)
	}
	return &armsim.Error{Status: status, Code: b.Error.Code, Message: b.Error.Message}
}
