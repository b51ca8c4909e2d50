package eventgrid

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/testenv"
)

// The webhook probes its public address: a path that stops reaching it
// (the Ingress answers 502, or someone else answers) takes the source down
// after ProbeFailures probes, and back up when it reaches it again.
func TestABrokenPublicPathTakesTheWebhookDown(t *testing.T) {
	var broken atomic.Value // "": proxy to the webhook; else how the path fails
	broken.Store("")
	var target atomic.Value // the webhook's address once it listens
	target.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch broken.Load().(string) {
		case "502":
			http.Error(rw, "bad gateway", http.StatusBadGateway)
		case "default backend":
			rw.WriteHeader(http.StatusOK) // answers everything, allows nothing
		default:
			if target.Load().(string) == "" {
				http.Error(rw, "no backend yet", http.StatusBadGateway)
				return
			}
			u, _ := url.Parse("http://" + target.Load().(string))
			httputil.NewSingleHostReverseProxy(u).ServeHTTP(rw, r)
		}
	}))
	t.Cleanup(srv.Close)
	front := srv.URL
	sink := &recordingSink{}
	w, err := New(Config{BindAddress: "127.0.0.1:0", SecretFile: writeSecret(t, testKey), PublicURL: front + DefaultPath,
		ProbeInterval: 50 * time.Millisecond}, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = w.Start(ctx) }()
	testenv.Eventually(t, 10*time.Second, "the webhook serves", func() string {
		if w.Addr() == "" {
			return "not listening"
		}
		target.Store(w.Addr())
		return ""
	})
	wantHealth := func(up bool, words string) {
		t.Helper()
		testenv.Eventually(t, 10*time.Second, "health", func() string {
			if h := w.Health(); h.Up != up || !strings.Contains(h.Reason, words) {
				return "health: " + h.Reason
			}
			return ""
		})
	}
	wantHealth(true, "")
	for _, how := range []string{"502", "default backend"} {
		broken.Store(how)
		wantHealth(false, "does not reach the webhook")
		if !strings.Contains(w.Health().Reason, front) {
			t.Errorf("the reason does not name the public address: %s", w.Health().Reason)
		}
		broken.Store("")
		wantHealth(true, "")
	}
}
