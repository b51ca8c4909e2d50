package eventgrid

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/tagsync/tagsync/internal/events"
)

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
			return post(t, e.url, gridBody(t, writeEvent("tok-"+strconv.Itoa(n))), bearer(token))
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
