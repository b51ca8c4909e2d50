package armsim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv"
)

// post is one request a receiver got.
type post struct {
	header http.Header
	body   []byte
	at     time.Time
}

// event is a delivered event in either schema, as JSON.
type event map[string]any

func (e event) str(key string) string { s, _ := e[key].(string); return s }

func (e event) data(key string) string { s, _ := e["data"].(map[string]any)[key].(string); return s }

// receiver is a webhook on a real HTTP server: it passes both handshakes
// (unless told otherwise), records every notification and answers it with
// the status fail gives (200 when fail is nil).
type receiver struct {
	srv *httptest.Server

	mu        sync.Mutex
	posts     []post
	handshake func(w http.ResponseWriter, r *http.Request) bool // true: answered
	fail      func(n int) int                                   // status for notification n (0-based)
}

func startReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rc.mu.Lock()
	hs := rc.handshake
	rc.mu.Unlock()
	if hs != nil && hs(w, r) {
		return
	}
	switch {
	case r.Method == http.MethodOptions:
		w.Header().Set("WebHook-Allowed-Origin", r.Header.Get("WebHook-Request-Origin"))
	case r.Header.Get("aeg-event-type") == "SubscriptionValidation":
		var evs []event
		_ = json.Unmarshal(body, &evs)
		writeBody(w, http.StatusOK, map[string]string{"validationResponse": evs[0].data("validationCode")})
	default:
		w.WriteHeader(rc.record(r.Header, body))
	}
}

// record keeps a notification and returns the status to answer.
func (rc *receiver) record(h http.Header, body []byte) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := len(rc.posts)
	rc.posts = append(rc.posts, post{header: h.Clone(), body: body, at: time.Now()})
	if rc.fail == nil {
		return http.StatusOK
	}
	return rc.fail(n)
}

func writeBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// setFail sets the status of each notification by its number.
func (rc *receiver) setFail(f func(n int) int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.fail = f
}

func (rc *receiver) setHandshake(f func(w http.ResponseWriter, r *http.Request) bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.handshake = f
}

// got returns the notifications so far.
func (rc *receiver) got() []post {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]post(nil), rc.posts...)
}

// events decodes every event of every acknowledged notification, in the
// order received: a POST is a JSON array or one CloudEvent.
func (rc *receiver) events(t testing.TB) []event {
	t.Helper()
	var out []event
	for _, p := range rc.got() {
		out = append(out, decodePost(t, p)...)
	}
	return out
}

func decodePost(t testing.TB, p post) []event {
	t.Helper()
	if strings.HasPrefix(strings.TrimSpace(string(p.body)), "{") {
		var ev event
		if err := json.Unmarshal(p.body, &ev); err != nil {
			t.Fatalf("decoding %s: %v", p.body, err)
		}
		return []event{ev}
	}
	var evs []event
	if err := json.Unmarshal(p.body, &evs); err != nil {
		t.Fatalf("decoding %s: %v", p.body, err)
	}
	return evs
}

// waitIdle waits until armsim has nothing left to deliver.
func waitIdle(t testing.TB, env *armsimtest.Env) armsim.EventGridStats {
	t.Helper()
	if err := env.Server.WaitEventGridIdle(ctx(t)); err != nil {
		t.Fatalf("event delivery still pending: %+v", env.Server.EventGridStats())
	}
	return env.Server.EventGridStats()
}

// waitEvents waits until the receiver has n events and returns them.
func waitEvents(t testing.TB, rc *receiver, n int) []event {
	t.Helper()
	var evs []event
	testenv.Eventually(t, 20*time.Second, "events delivered", func() string {
		if evs = rc.events(t); len(evs) < n {
			return "have " + itoa(len(evs)) + " of " + itoa(n)
		}
		return ""
	})
	return evs
}

// onlyUnder keeps the subscription to events about resources under scope
// (leaving out, e.g., the event of the subscription's own creation).
func onlyUnder(p armsim.EventSubscriptionProperties, scope string) armsim.EventSubscriptionProperties {
	p.Filter = &armsim.EventSubscriptionFilter{SubjectBeginsWith: scope}
	return p
}

// eventGridEnv starts armsim over plain HTTP with a fast retry schedule
// and the test estate.
func eventGridEnv(t *testing.T, opts ...armsimtest.Option) (*armsimtest.Env, estate) {
	o := append([]armsimtest.Option{armsimtest.WithPlainHTTP(),
		armsimtest.WithRetrySchedule(10*time.Millisecond, 20*time.Millisecond, 40*time.Millisecond)}, opts...)
	env := armsimtest.Start(t, o...)
	return env, seedEstate(t, env.Server, env.SubscriptionID)
}

// groupScope is the test estate's resource group ID.
func groupScope(env *armsimtest.Env) string {
	return "/subscriptions/" + env.SubscriptionID + "/resourceGroups/" + rg
}
