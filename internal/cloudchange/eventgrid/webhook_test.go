package eventgrid

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

func TestEventGridSchemaPublishesOneChangePerTagEvent(t *testing.T) {
	e := serveWithKey(t)
	now := time.Now()
	vm := "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg1/providers/Microsoft.Compute/virtualMachines/vm1"
	body := gridBody(t,
		writeEvent("write"),
		armEvent("tags-write", typeWrite, scaleSet+"/providers/Microsoft.Resources/tags/default", "Microsoft.Resources/tags/write", now),
		armEvent("tags-delete", typeDelete, scaleSet+"/providers/Microsoft.Resources/tags/default", "Microsoft.Resources/tags/delete", now),
		armEvent("delete", typeDelete, vm, "Microsoft.Compute/virtualMachines/delete", now),
		armEvent("action", typeAction, vm, "Microsoft.Compute/virtualMachines/deallocate/action", now),
		armEvent("failure", "Microsoft.Resources.ResourceWriteFailure", vm, "Microsoft.Compute/virtualMachines/write", now),
		armEvent("unknown", "Contoso.Something.Happened", vm, "", now),
	)
	before := counter(t, "events_total", "outcome", outcomeIgnored)

	if status, msg := post(t, e.keyURL(testKey), body, nil); status != http.StatusOK {
		t.Fatalf("status %d: %s", status, msg)
	}
	e.wantOnePublish(t,
		cloudchange.Change{ID: "write", Kind: cloudchange.KindWrite, Resource: scaleSet},
		cloudchange.Change{ID: "tags-write", Kind: cloudchange.KindWrite, Resource: scaleSet},
		cloudchange.Change{ID: "tags-delete", Kind: cloudchange.KindWrite, Resource: scaleSet},
		cloudchange.Change{ID: "delete", Kind: cloudchange.KindDelete, Resource: vm},
	)
	if got := counter(t, "events_total", "outcome", outcomeIgnored); got != before+3 {
		t.Errorf("ignored events: got %v more, want 3", got-before)
	}
	if h := e.w.Health(); h.LastDelivery.IsZero() {
		t.Errorf("Health.LastDelivery not set after a publish: %+v", h)
	}
}

func TestCloudEventsEachMode(t *testing.T) {
	for _, mode := range []string{"structured", "binary", "batch"} {
		t.Run(mode, func(t *testing.T) {
			e := serveWithKey(t)
			status, msg := do(t, cloudEventRequest(t, e.keyURL(testKey), mode, cloudEvent(t, "ce-"+mode)))
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, msg)
			}
			e.wantOnePublish(t, cloudchange.Change{ID: "ce-" + mode, Kind: cloudchange.KindWrite, Resource: scaleSet})
		})
	}
}

func TestBatchOfHundredIsOnePublish(t *testing.T) {
	for _, schema := range []string{"eventgrid", "cloudevents"} {
		t.Run(schema, func(t *testing.T) {
			e := serveWithKey(t)
			var grid []map[string]any
			var ces []event.Event
			var want []cloudchange.Change
			for i := range 100 {
				id := fmt.Sprintf("%s-%03d", schema, i)
				grid = append(grid, writeEvent(id))
				ces = append(ces, cloudEvent(t, id))
				want = append(want, cloudchange.Change{ID: id, Kind: cloudchange.KindWrite, Resource: scaleSet})
			}
			var status int
			var msg string
			if schema == "eventgrid" {
				status, msg = post(t, e.keyURL(testKey), gridBody(t, grid...), nil)
			} else {
				status, msg = do(t, cloudEventRequest(t, e.keyURL(testKey), "batch", ces...))
			}
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, msg)
			}
			e.wantOnePublish(t, want...)
		})
	}
}

func TestSubscriptionValidationIsAnsweredWhenAuthenticated(t *testing.T) {
	e := serveWithKey(t)
	validation := gridBody(t, map[string]any{
		"id": "v1", "topic": "/subscriptions/00000000-0000-0000-0000-000000000001", "subject": "",
		"eventType": typeValidation, "eventTime": time.Now().Format(time.RFC3339Nano), "dataVersion": "1",
		"data": map[string]any{"validationCode": "512d38b6-c7b8-40c8-89fe-f46f9e9622b6",
			"validationUrl": "https://rp-eastus2.eventgrid.azure.net/validate?id=x"},
	})
	header := http.Header{"Aeg-Event-Type": {"SubscriptionValidation"}}

	wantRefused(t, reasonUnauthenticated, http.StatusUnauthorized, func() (int, string) { return post(t, e.url, validation, header) })
	status, body := post(t, e.keyURL(testKey), validation, header)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var answer map[string]string
	if err := json.Unmarshal([]byte(body), &answer); err != nil || answer["validationResponse"] != "512d38b6-c7b8-40c8-89fe-f46f9e9622b6" {
		t.Errorf("answer %q (%v), want the validation code as validationResponse", body, err)
	}
	if calls := e.sink.published(); len(calls) != 0 {
		t.Errorf("a validation published %v", calls)
	}
}

func TestCloudEventsAbuseProtectionHandshake(t *testing.T) {
	e := serveWithKey(t)
	req, _ := http.NewRequest(http.MethodOptions, e.url, nil)
	req.Header.Set("WebHook-Request-Origin", "eventgrid.azure.net")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("WebHook-Allowed-Origin") != "eventgrid.azure.net" ||
		resp.Header.Get("WebHook-Allowed-Rate") == "" {
		t.Errorf("answer %d %v, want 200 allowing origin eventgrid.azure.net", resp.StatusCode, resp.Header)
	}

	noOrigin, _ := http.NewRequest(http.MethodOptions, e.url, nil)
	wantRefused(t, reasonMalformed, http.StatusBadRequest, func() (int, string) { return do(t, noOrigin) })
}

func TestOversizedDeliveryIsRefused(t *testing.T) {
	e := serve(t, Config{SecretFile: writeSecret(t, testKey), MaxBodyBytes: 4096})
	big := writeEvent("big")
	big["data"].(map[string]any)["padding"] = strings.Repeat("x", 5000)
	wantRefused(t, reasonTooLarge, http.StatusRequestEntityTooLarge, func() (int, string) {
		return post(t, e.keyURL(testKey), gridBody(t, big), nil)
	})
	// Without a Content-Length, the reader's limit refuses it.
	wantRefused(t, reasonTooLarge, http.StatusRequestEntityTooLarge, func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, e.keyURL(testKey), strings.NewReader(string(gridBody(t, big))))
		req.ContentLength = -1
		return do(t, req)
	})
	if calls := e.sink.published(); len(calls) != 0 {
		t.Errorf("an oversized delivery published %v", calls)
	}
}

func TestOldEvents(t *testing.T) {
	e := serveWithKey(t)
	old := armEvent("old", typeWrite, scaleSet, "Microsoft.Compute/virtualMachineScaleSets/write", time.Now().Add(-2*time.Hour))
	before := counter(t, "events_total", "outcome", outcomeTooOld)

	wantRefused(t, reasonTooOld, http.StatusBadRequest, func() (int, string) {
		return post(t, e.keyURL(testKey), gridBody(t, old), nil)
	})
	if status, msg := post(t, e.keyURL(testKey), gridBody(t, old, writeEvent("young")), nil); status != http.StatusOK {
		t.Fatalf("old and young: status %d: %s", status, msg)
	}
	e.wantOnePublish(t, cloudchange.Change{ID: "young", Kind: cloudchange.KindWrite, Resource: scaleSet})
	if got := counter(t, "events_total", "outcome", outcomeTooOld); got != before+2 {
		t.Errorf("too old events: got %v more, want 2", got-before)
	}
}

func TestMalformedDeliveries(t *testing.T) {
	e := serveWithKey(t)
	noID := writeEvent("")
	noTime := writeEvent("no-time")
	delete(noTime, "eventTime")
	cases := map[string]func() (int, string){
		"not JSON":    func() (int, string) { return post(t, e.keyURL(testKey), []byte("{oops"), nil) },
		"an object":   func() (int, string) { return post(t, e.keyURL(testKey), []byte(`{"id":"x"}`), nil) },
		"empty array": func() (int, string) { return post(t, e.keyURL(testKey), []byte(`[]`), nil) },
		"no id":       func() (int, string) { return post(t, e.keyURL(testKey), gridBody(t, noID), nil) },
		"no time":     func() (int, string) { return post(t, e.keyURL(testKey), gridBody(t, noTime), nil) },
		"data not JSON": func() (int, string) {
			return post(t, e.keyURL(testKey), []byte(`[{"id":"a","eventType":"x","eventTime":"2026-01-01T00:00:00Z","data":"s"}]`), nil)
		},
		"bad CloudEvent": func() (int, string) {
			return post(t, e.keyURL(testKey), []byte(`{"specversion":"1.0"}`), http.Header{"Content-Type": {"application/cloudevents+json"}})
		},
		"bad batch": func() (int, string) {
			return post(t, e.keyURL(testKey), []byte(`{}`), http.Header{"Content-Type": {"application/cloudevents-batch+json"}})
		},
	}
	for name, send := range cases {
		t.Run(name, func(t *testing.T) { wantRefused(t, reasonMalformed, http.StatusBadRequest, send) })
	}
	wantRefused(t, reasonMethod, http.StatusMethodNotAllowed, func() (int, string) {
		req, _ := http.NewRequest(http.MethodGet, e.keyURL(testKey), nil)
		return do(t, req)
	})
	if calls := e.sink.published(); len(calls) != 0 {
		t.Errorf("malformed deliveries published %v", calls)
	}
}

func TestDuplicateIDsArePublishedOnce(t *testing.T) {
	e := serveWithKey(t)
	before := counter(t, "events_total", "outcome", outcomeDuplicate)
	for range 3 {
		if status, msg := post(t, e.keyURL(testKey), gridBody(t, writeEvent("dup"), writeEvent("dup")), nil); status != http.StatusOK {
			t.Fatalf("status %d: %s", status, msg)
		}
	}
	e.wantOnePublish(t, cloudchange.Change{ID: "dup", Kind: cloudchange.KindWrite, Resource: scaleSet})
	if got := counter(t, "events_total", "outcome", outcomeDuplicate); got != before+5 {
		t.Errorf("duplicates: got %v more, want 5", got-before)
	}
}

func TestDuplicateMemoryIsBounded(t *testing.T) {
	e := serve(t, Config{SecretFile: writeSecret(t, testKey), DuplicateIDs: 2})
	for _, id := range []string{"a", "b", "c", "a"} {
		if status, msg := post(t, e.keyURL(testKey), gridBody(t, writeEvent(id)), nil); status != http.StatusOK {
			t.Fatalf("status %d: %s", status, msg)
		}
	}
	if got := len(e.sink.published()); got != 4 {
		t.Errorf("Publish calls: got %d, want 4 (a forgotten after two newer IDs)", got)
	}
}

func TestOnlyTheLeaderPublishes(t *testing.T) {
	e := serveWithKey(t)
	elected := make(chan struct{})
	e.w.AwaitLeader(elected)
	wantRefused(t, reasonNotLeader, http.StatusServiceUnavailable, func() (int, string) {
		return post(t, e.keyURL(testKey), gridBody(t, writeEvent("early")), nil)
	})
	close(elected)
	if status, msg := post(t, e.keyURL(testKey), gridBody(t, writeEvent("early")), nil); status != http.StatusOK {
		t.Fatalf("once elected: status %d: %s", status, msg)
	}
	e.wantOnePublish(t, cloudchange.Change{ID: "early", Kind: cloudchange.KindWrite, Resource: scaleSet})
}

func TestValidationIsAnsweredBeforeElection(t *testing.T) {
	e := serveWithKey(t)
	e.w.AwaitLeader(make(chan struct{}))
	validation := gridBody(t, map[string]any{"id": "v", "eventType": typeValidation, "eventTime": time.Now().Format(time.RFC3339),
		"data": map[string]any{"validationCode": "code"}})
	if status, body := post(t, e.keyURL(testKey), validation, nil); status != http.StatusOK || !strings.Contains(body, `"code"`) {
		t.Errorf("a replica that is not the leader answered the validation %d %s", status, body)
	}
}

// A delivery the hub's full queue refuses is answered 503, so that Event
// Grid delivers it again: it is never acknowledged and dropped.
func TestAFullQueueAnswers503(t *testing.T) {
	e := serveWithKey(t)
	e.sink.mu.Lock()
	e.sink.full = true
	e.sink.mu.Unlock()
	wantRefused(t, reasonQueueFull, http.StatusServiceUnavailable, func() (int, string) {
		return post(t, e.keyURL(testKey), gridBody(t, writeEvent("no-room")), nil)
	})
}
