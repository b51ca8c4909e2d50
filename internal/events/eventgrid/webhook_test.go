package eventgrid

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/go-logr/logr/funcr"

	"github.com/tagsync/tagsync/internal/events"
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
		events.Change{ID: "write", Kind: events.KindWrite, Resource: scaleSet},
		events.Change{ID: "tags-write", Kind: events.KindWrite, Resource: scaleSet},
		events.Change{ID: "tags-delete", Kind: events.KindWrite, Resource: scaleSet},
		events.Change{ID: "delete", Kind: events.KindDelete, Resource: vm},
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
			e.wantOnePublish(t, events.Change{ID: "ce-" + mode, Kind: events.KindWrite, Resource: scaleSet})
		})
	}
}

func TestBatchOfHundredIsOnePublish(t *testing.T) {
	for _, schema := range []string{"eventgrid", "cloudevents"} {
		t.Run(schema, func(t *testing.T) {
			e := serveWithKey(t)
			var grid []map[string]any
			var ces []event.Event
			var want []events.Change
			for i := range 100 {
				id := fmt.Sprintf("%s-%03d", schema, i)
				grid = append(grid, writeEvent(id))
				ces = append(ces, cloudEvent(t, id))
				want = append(want, events.Change{ID: id, Kind: events.KindWrite, Resource: scaleSet})
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

func TestSharedSecret(t *testing.T) {
	e := serveWithKey(t)
	body := gridBody(t, writeEvent("k1"))
	wantRefused(t, reasonUnauthenticated, http.StatusUnauthorized, func() (int, string) { return post(t, e.url, body, nil) })
	wantRefused(t, reasonBadKey, http.StatusForbidden, func() (int, string) { return post(t, e.keyURL("wrong-key-of-twenty-chars"), body, nil) })
	wantRefused(t, reasonBadKey, http.StatusForbidden, func() (int, string) { return post(t, e.keyURL(testKey[:5]), body, nil) })
	if calls := e.sink.published(); len(calls) != 0 {
		t.Fatalf("refused deliveries published %v", calls)
	}
	if status, msg := post(t, e.keyURL(testKey), body, nil); status != http.StatusOK {
		t.Fatalf("the right key: status %d: %s", status, msg)
	}
	e.wantOnePublish(t, events.Change{ID: "k1", Kind: events.KindWrite, Resource: scaleSet})
}

func TestSharedSecretRotation(t *testing.T) {
	const next = "the-next-secret-0123456789"
	path := writeSecret(t, testKey+"\n")
	e := serve(t, Config{SecretFile: path})
	accepted := func(key string) bool {
		status, _ := post(t, e.keyURL(key), gridBody(t, writeEvent(key+time.Now().String())), nil)
		return status == http.StatusOK
	}
	if !accepted(testKey) || accepted(next) {
		t.Fatal("before the rotation only the first secret is accepted")
	}
	rewrite := func(content string) {
		t.Helper()
		if err := writeFileChanged(path, content); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(testKey + "\n" + next + "\n")
	if !accepted(testKey) || !accepted(next) {
		t.Fatal("during the rotation both secrets are accepted")
	}
	rewrite(next + "\n")
	if accepted(testKey) || !accepted(next) {
		t.Fatal("after the rotation only the new secret is accepted")
	}
}

func TestBearerTokens(t *testing.T) {
	const audience = "api://tagsync-eventgrid"
	tn := newTenant(t)
	e := serve(t, tn.config(audience))
	other, err := newTenantKey()
	if err != nil {
		t.Fatal(err)
	}
	with := func(change func(map[string]any)) map[string]any {
		c := tn.claims(audience)
		change(c)
		return c
	}
	n := 0
	send := func(token string) func() (int, string) {
		return func() (int, string) {
			n++
			return post(t, e.url, gridBody(t, writeEvent(fmt.Sprint("tok-", n))), bearer(token))
		}
	}

	if status, msg := send(tn.sign(t, tn.claims(audience), tn.key))(); status != http.StatusOK {
		t.Fatalf("a valid token: status %d: %s", status, msg)
	}
	e.wantOnePublish(t, events.Change{ID: "tok-1", Kind: events.KindWrite, Resource: scaleSet})

	refused := map[string]string{
		"wrong issuer":       tn.sign(t, with(func(c map[string]any) { c["iss"] = "https://login.microsoftonline.com/" + tn.id + "/v2.0" }), tn.key),
		"other tenant":       tn.sign(t, with(func(c map[string]any) { c["iss"] = tn.authority + "/99999999-0000-0000-0000-000000000000/v2.0" }), tn.key),
		"v1 issuer, not on":  tn.sign(t, with(func(c map[string]any) { c["iss"] = "https://sts.windows.net/" + tn.id + "/" }), tn.key),
		"wrong audience":     tn.sign(t, with(func(c map[string]any) { c["aud"] = "api://someone-else" }), tn.key),
		"bad signature":      tn.sign(t, tn.claims(audience), other),
		"expired":            tn.sign(t, with(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() }), tn.key),
		"not a JWT":          "not-a-token",
		"signature stripped": strings.TrimRightFunc(tn.sign(t, tn.claims(audience), tn.key), func(r rune) bool { return r != '.' }),
	}
	for name, token := range refused {
		t.Run(name, func(t *testing.T) {
			wantRefused(t, reasonBadToken, http.StatusForbidden, send(token))
		})
	}
	wantRefused(t, reasonUnauthenticated, http.StatusUnauthorized, func() (int, string) {
		return post(t, e.url, gridBody(t, writeEvent("no-token")), nil)
	})
	if calls := e.sink.published(); len(calls) != 1 {
		t.Errorf("refused tokens published: %v", calls[1:])
	}
}

func TestBearerTokenV1IssuerWhenAccepted(t *testing.T) {
	const audience = "6c1e9d2a-8f4b-4a57-9d0e-2b7c3f5a1e84"
	tn := newTenant(t)
	cfg := tn.config(audience)
	cfg.AcceptV1Issuer = true
	e := serve(t, cfg)
	v1 := tn.claims(audience)
	v1["iss"] = "https://sts.windows.net/" + tn.id + "/"
	if status, msg := post(t, e.url, gridBody(t, writeEvent("v1")), bearer(tn.sign(t, v1, tn.key))); status != http.StatusOK {
		t.Fatalf("a v1 token: status %d: %s", status, msg)
	}
	v1["iss"] = "https://sts.windows.net/99999999-0000-0000-0000-000000000000/"
	wantRefused(t, reasonBadToken, http.StatusForbidden, func() (int, string) {
		return post(t, e.url, gridBody(t, writeEvent("v1-other")), bearer(tn.sign(t, v1, tn.key)))
	})
}

func TestEitherModeAuthenticates(t *testing.T) {
	const audience = "api://tagsync-eventgrid"
	tn := newTenant(t)
	cfg := tn.config(audience)
	cfg.SecretFile = writeSecret(t, testKey)
	e := serve(t, cfg)
	if status, msg := post(t, e.keyURL(testKey), gridBody(t, writeEvent("by-key")), nil); status != http.StatusOK {
		t.Fatalf("by key: status %d: %s", status, msg)
	}
	if status, msg := post(t, e.url, gridBody(t, writeEvent("by-token")), bearer(tn.sign(t, tn.claims(audience), tn.key))); status != http.StatusOK {
		t.Fatalf("by token: status %d: %s", status, msg)
	}
}

func TestAuthorityDownIsRetryable(t *testing.T) {
	tn := newTenant(t)
	cfg := tn.config("api://tagsync-eventgrid")
	cfg.TenantID = "00000000-0000-0000-0000-00000000dead" // no discovery document
	e := serve(t, cfg)
	wantRefused(t, reasonAuthUnavailable, http.StatusServiceUnavailable, func() (int, string) {
		return post(t, e.url, gridBody(t, writeEvent("x")), bearer(tn.sign(t, tn.claims("api://tagsync-eventgrid"), tn.key)))
	})
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
	e.wantOnePublish(t, events.Change{ID: "young", Kind: events.KindWrite, Resource: scaleSet})
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
	e.wantOnePublish(t, events.Change{ID: "dup", Kind: events.KindWrite, Resource: scaleSet})
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
	e.wantOnePublish(t, events.Change{ID: "early", Kind: events.KindWrite, Resource: scaleSet})
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

func TestLogsNeverShowTheKey(t *testing.T) {
	var logged strings.Builder
	var mu sync.Mutex
	e := serveWith(t, Config{SecretFile: writeSecret(t, testKey)}, func(w *Webhook) {
		w.log = funcr.New(func(prefix, args string) {
			mu.Lock()
			defer mu.Unlock()
			logged.WriteString(prefix + " " + args + "\n")
		}, funcr.Options{Verbosity: 9})
	})
	const wrong = "a-wrong-key-of-20-chars"
	post(t, e.keyURL(wrong), gridBody(t, writeEvent("l1")), nil)
	post(t, e.keyURL(testKey), []byte("{oops"), nil)
	post(t, e.keyURL(testKey), gridBody(t, writeEvent("l2")), nil)

	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), reasonBadKey) {
		t.Fatalf("the refusals were not logged at V(1): %s", logged.String())
	}
	for _, secret := range []string{testKey, wrong} {
		if strings.Contains(logged.String(), secret) {
			t.Errorf("the log shows a key: %s", logged.String())
		}
	}
}
