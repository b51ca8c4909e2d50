package eventgrid

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/tagsync/tagsync/internal/cloudchange"
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
	e.wantOnePublish(t, cloudchange.Change{ID: "k1", Kind: cloudchange.KindWrite, Resource: scaleSet})
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
		c := tn.eventGridClaims(audience)
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

	if status, msg := send(tn.sign(t, tn.eventGridClaims(audience), tn.key))(); status != http.StatusOK {
		t.Fatalf("a valid token: status %d: %s", status, msg)
	}
	e.wantOnePublish(t, cloudchange.Change{ID: "tok-1", Kind: cloudchange.KindWrite, Resource: scaleSet})

	refused := map[string]string{
		"wrong issuer":       tn.sign(t, with(func(c map[string]any) { c["iss"] = "https://login.microsoftonline.com/" + tn.id + "/v2.0" }), tn.key),
		"other tenant":       tn.sign(t, with(func(c map[string]any) { c["iss"] = tn.authority + "/99999999-0000-0000-0000-000000000000/v2.0" }), tn.key),
		"v1 issuer, not on":  tn.sign(t, with(func(c map[string]any) { c["iss"] = "https://sts.windows.net/" + tn.id + "/" }), tn.key),
		"wrong audience":     tn.sign(t, with(func(c map[string]any) { c["aud"] = "api://someone-else" }), tn.key),
		"bad signature":      tn.sign(t, tn.eventGridClaims(audience), other),
		"expired":            tn.sign(t, with(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() }), tn.key),
		"not a JWT":          "not-a-token",
		"signature stripped": strings.TrimRightFunc(tn.sign(t, tn.eventGridClaims(audience), tn.key), func(r rune) bool { return r != '.' }),
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
	v1["iss"], v1["ver"], v1["appid"] = "https://sts.windows.net/"+tn.id+"/", "1.0", EventGridAppID
	if status, msg := post(t, e.url, gridBody(t, writeEvent("v1")), bearer(tn.sign(t, v1, tn.key))); status != http.StatusOK {
		t.Fatalf("a v1 token: status %d: %s", status, msg)
	}
	v1["iss"] = "https://sts.windows.net/99999999-0000-0000-0000-000000000000/"
	wantRefused(t, reasonBadToken, http.StatusForbidden, func() (int, string) {
		return post(t, e.url, gridBody(t, writeEvent("v1-other")), bearer(tn.sign(t, v1, tn.key)))
	})
}

// TestBearerTokenCallerAllowList: with AllowedCallers, a valid token
// passes only when the application that obtained it is listed: azp in a
// v2.0 token, appid in a v1.0 one.
func TestBearerTokenCallerAllowList(t *testing.T) {
	const audience = "api://tagsync-eventgrid"
	const other = "0b5f3c1e-7d2a-4e69-8c41-9a6d2f0e1b37"
	tn := newTenant(t)
	cfg := tn.config(audience)
	cfg.AcceptV1Issuer = true
	cfg.AllowedCallers = []string{"0B5F3C1E-0000-4000-8000-000000000001", EventGridAppID}
	e := serve(t, cfg)
	token := func(ver string, claims map[string]any) string {
		c := tn.claims(audience)
		c["ver"] = ver
		if ver == "1.0" {
			c["iss"] = "https://sts.windows.net/" + tn.id + "/"
		}
		for k, v := range claims {
			c[k] = v
		}
		return tn.sign(t, c, tn.key)
	}
	n := 0
	send := func(token string) func() (int, string) {
		return func() (int, string) {
			n++
			return post(t, e.url, gridBody(t, writeEvent("caller-"+strconv.Itoa(n))), bearer(token))
		}
	}

	accepted := map[string]string{
		"v1 appid":                   token("1.0", map[string]any{"appid": EventGridAppID}),
		"v2 azp":                     token("2.0", map[string]any{"azp": EventGridAppID}),
		"v2 azp in upper case":       token("2.0", map[string]any{"azp": strings.ToUpper(EventGridAppID)}),
		"the other listed caller":    token("2.0", map[string]any{"azp": "0b5f3c1e-0000-4000-8000-000000000001"}),
		"no ver, appid":              token("", map[string]any{"appid": EventGridAppID}),
		"v1 appid, azp of no matter": token("1.0", map[string]any{"appid": EventGridAppID, "azp": other}),
	}
	for name, tok := range accepted {
		if status, msg := send(tok)(); status != http.StatusOK {
			t.Errorf("%s: status %d: %s", name, status, msg)
		}
	}
	refused := map[string]string{
		"v1 appid of another app": token("1.0", map[string]any{"appid": other}),
		"v2 azp of another app":   token("2.0", map[string]any{"azp": other}),
		"v2 appid, azp another":   token("2.0", map[string]any{"appid": EventGridAppID, "azp": other}),
		"v2 without azp":          token("2.0", map[string]any{"appid": EventGridAppID}),
		"no caller claim":         token("", nil),
	}
	for name, tok := range refused {
		t.Run(name, func(t *testing.T) {
			wantRefused(t, reasonCallerNotAllowed, http.StatusForbidden, send(tok))
		})
	}
	// A token that fails before its caller is looked at is a bad token.
	expired := token("2.0", map[string]any{"azp": other, "exp": time.Now().Add(-time.Minute).Unix()})
	wantRefused(t, reasonBadToken, http.StatusForbidden, send(expired))
	if calls := e.sink.published(); len(calls) != len(accepted) {
		t.Errorf("%d deliveries published, want the %d accepted", len(calls), len(accepted))
	}
}

// TestBearerTokenCallersDefaultToEventGrid: without AllowedCallers only
// Event Grid's own application may deliver; a valid token another
// application of the tenant obtained for the audience is refused.
func TestBearerTokenCallersDefaultToEventGrid(t *testing.T) {
	const audience = "api://tagsync-eventgrid"
	tn := newTenant(t)
	e := serve(t, tn.config(audience))
	n := 0
	send := func(caller map[string]any) func() (int, string) {
		return func() (int, string) {
			c := tn.claims(audience)
			for k, v := range caller {
				c[k] = v
			}
			n++
			return post(t, e.url, gridBody(t, writeEvent("default-"+strconv.Itoa(n))), bearer(tn.sign(t, c, tn.key)))
		}
	}
	for _, caller := range []map[string]any{{"ver": "2.0", "azp": EventGridAppID}, {"ver": "1.0", "appid": EventGridAppID}} {
		if status, msg := send(caller)(); status != http.StatusOK {
			t.Errorf("Event Grid's token %v: status %d: %s", caller, status, msg)
		}
	}
	for _, caller := range []map[string]any{{"ver": "2.0", "azp": "0b5f3c1e-7d2a-4e69-8c41-9a6d2f0e1b37"},
		{"ver": "1.0", "appid": "0b5f3c1e-7d2a-4e69-8c41-9a6d2f0e1b37"}, {}} {
		wantRefused(t, reasonCallerNotAllowed, http.StatusForbidden, send(caller))
	}
	if calls := e.sink.published(); len(calls) != 2 {
		t.Errorf("%d deliveries published, want Event Grid's 2", len(calls))
	}
}

func TestDefaultCallersFollowTheCloud(t *testing.T) {
	for authority, want := range map[string]string{
		DefaultAuthority:                    EventGridAppID,
		"https://login.microsoftonline.us":  EventGridGovernmentAppID,
		"https://LOGIN.microsoftonline.us/": EventGridGovernmentAppID,
		"http://127.0.0.1:8443":             EventGridAppID,
	} {
		if got := DefaultCallers(authority); len(got) != 1 || got[0] != want {
			t.Errorf("DefaultCallers(%s) = %v, want %s", authority, got, want)
		}
	}
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
	if status, msg := post(t, e.url, gridBody(t, writeEvent("by-token")), bearer(tn.sign(t, tn.eventGridClaims(audience), tn.key))); status != http.StatusOK {
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
	post(t, e.url, gridBody(t, writeEvent("l1h")), http.Header{"X-Tagsync-Key": {wrong}})
	post(t, e.url, []byte("{oops"), http.Header{"X-Tagsync-Key": {testKey}})
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

// TestSharedSecretInAHeader: the secret may come in the X-Tagsync-Key
// header (an event subscription's custom delivery property), compared as
// the URL's key is; the header wins over the URL, which still works alone.
func TestSharedSecretInAHeader(t *testing.T) {
	e := serveWithKey(t)
	header := func(key string) http.Header { return http.Header{"X-Tagsync-Key": {key}} }
	if status, msg := post(t, e.url, gridBody(t, writeEvent("h1")), header(testKey)); status != http.StatusOK {
		t.Fatalf("the right key in the header: status %d: %s", status, msg)
	}
	wantRefused(t, reasonBadKey, http.StatusForbidden, func() (int, string) {
		return post(t, e.url, gridBody(t, writeEvent("h2")), header("wrong-key-of-twenty-chars"))
	})
	wantRefused(t, reasonBadKey, http.StatusForbidden, func() (int, string) {
		return post(t, e.keyURL(testKey), gridBody(t, writeEvent("h3")), header("wrong-key-of-twenty-chars"))
	})
	if status, msg := post(t, e.keyURL("wrong-key-of-twenty-chars"), gridBody(t, writeEvent("h4")), header(testKey)); status != http.StatusOK {
		t.Fatalf("the right key in the header, a wrong one in the URL: status %d: %s", status, msg)
	}
	if status, msg := post(t, e.keyURL(testKey), gridBody(t, writeEvent("h5")), nil); status != http.StatusOK {
		t.Fatalf("the right key in the URL: status %d: %s", status, msg)
	}
	if n := len(e.sink.published()); n != 3 {
		t.Errorf("%d deliveries published, want the 3 with the right key where it counts", n)
	}
}

// TestSigningKeysUnavailableIsRetryable: a token that cannot be checked
// because the tenant's signing keys (or its discovery document) cannot be
// fetched — the authority hangs or fails — is refused 503 (Event Grid
// retries it), within the authority timeout; once the authority answers
// again, the same token passes.
func TestSigningKeysUnavailableIsRetryable(t *testing.T) {
	const audience = "api://tagsync-eventgrid"
	cases := map[string]struct {
		path   string
		broken func(w http.ResponseWriter, r *http.Request)
	}{
		"keys hang": {"/discovery/v2.0/keys", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
		"keys fail": {"/discovery/v2.0/keys", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "down", http.StatusInternalServerError)
		}},
		"discovery hangs": {"/v2.0/.well-known/openid-configuration", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tn := newTenant(t)
			var broken atomic.Bool
			broken.Store(true)
			authority := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if broken.Load() && r.URL.Path == "/"+tn.id+tc.path {
					tc.broken(w, r)
					return
				}
				proxyTo(t, tn.authority, w, r)
			}))
			t.Cleanup(authority.Close)
			cfg := tn.config(audience)
			cfg.Authority, cfg.AuthorityTimeout = authority.URL, 300*time.Millisecond
			e := serve(t, cfg)
			claims := tn.eventGridClaims(audience)
			claims["iss"] = authority.URL + "/" + tn.id + "/v2.0"
			token := tn.sign(t, claims, tn.key)
			started := time.Now()
			wantRefused(t, reasonAuthUnavailable, http.StatusServiceUnavailable, func() (int, string) {
				return post(t, e.url, gridBody(t, writeEvent("keys-1")), bearer(token))
			})
			if took := time.Since(started); took > 5*time.Second {
				t.Errorf("the refusal took %s, want about the authority timeout", took)
			}
			broken.Store(false)
			if status, msg := post(t, e.url, gridBody(t, writeEvent("keys-2")), bearer(token)); status != http.StatusOK {
				t.Fatalf("the authority answers again: status %d: %s", status, msg)
			}
		})
	}
}

// proxyTo answers r with what the tenant's server at base answers to its
// path, the tenant's URLs in the body rewritten to the proxy's.
func proxyTo(t *testing.T, base string, w http.ResponseWriter, r *http.Request) {
	resp, err := http.Get(base + r.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	body = bytes.ReplaceAll(body, []byte(base), []byte("http://"+r.Host))
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// Tokens naming made-up key IDs cost the authority a bounded number of
// fetches (keyFetchBurst, then one per keyFetchEvery), however many
// arrive; they are answered 503 meanwhile, and a valid token still passes.
func TestMadeUpKeyIDsAreFetchedForAtABoundedRate(t *testing.T) {
	const audience = "api://tagsync-eventgrid"
	tn := newTenant(t)
	var fetches atomic.Int32
	authority := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/keys") {
			fetches.Add(1)
		}
		proxyTo(t, tn.authority, w, r)
	}))
	t.Cleanup(authority.Close)
	cfg := tn.config(audience)
	cfg.Authority = authority.URL
	e := serve(t, cfg)
	claims := tn.eventGridClaims(audience)
	claims["iss"] = authority.URL + "/" + tn.id + "/v2.0"
	if status, msg := post(t, e.url, gridBody(t, writeEvent("valid")), bearer(tn.sign(t, claims, tn.key))); status != http.StatusOK {
		t.Fatalf("a valid token: status %d: %s", status, msg)
	}
	forger, err := newTenantKey()
	if err != nil {
		t.Fatal(err)
	}
	const forged = 20
	for i := range forged {
		token := signWithKeyID(t, claims, forger, "made-up-"+strconv.Itoa(i))
		status, _ := post(t, e.url, gridBody(t, writeEvent("forged-"+strconv.Itoa(i))), bearer(token))
		if status == http.StatusOK {
			t.Fatalf("a token with a made-up key ID was accepted")
		}
	}
	if n := fetches.Load(); n > keyFetchBurst+1 {
		t.Errorf("%d key fetches for one valid token and %d made-up key IDs, want at most %d", n, forged, keyFetchBurst+1)
	}
	if status, msg := post(t, e.url, gridBody(t, writeEvent("valid-again")), bearer(tn.sign(t, claims, tn.key))); status != http.StatusOK {
		t.Fatalf("a valid token after the flood: status %d: %s", status, msg)
	}
}
