package eventgrid

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/testenv"
)

// hostOf is the host:port an endpoint serves at.
func (e *endpoint) hostOf() string {
	return strings.TrimPrefix(strings.TrimSuffix(e.url, DefaultPath), "http://")
}

// follower serves a webhook that does not lead and forwards to whatever
// lookup returns, holding deliveries up to wait.
func follower(t *testing.T, wait time.Duration, lookup func() string) (*endpoint, chan struct{}) {
	t.Helper()
	elected := make(chan struct{})
	e := serveWith(t, Config{SecretFile: writeSecret(t, testKey), LeaderWait: wait}, func(w *Webhook) {
		w.AwaitLeader(elected)
		w.FollowLeader(func(context.Context, time.Duration) (string, error) { return lookup(), nil })
	})
	return e, elected
}

func TestFollowerForwardsToTheLeader(t *testing.T) {
	leader := serveWithKey(t)
	f, _ := follower(t, time.Second, leader.hostOf)
	forwarded := counter(t, "deliveries_total", "result", resultForwarded)

	if status, msg := post(t, f.keyURL(testKey), gridBody(t, writeEvent("via-follower")), nil); status != http.StatusOK {
		t.Fatalf("a delivery to the follower: status %d: %s", status, msg)
	}
	leader.wantOnePublish(t, cloudchange.Change{ID: "via-follower", Kind: cloudchange.KindWrite, Resource: scaleSet})
	if n := len(f.sink.published()); n != 0 {
		t.Errorf("the follower published %d times itself, want none", n)
	}
	if n := counter(t, "deliveries_total", "result", resultForwarded) - forwarded; n != 1 {
		t.Errorf("forwarded deliveries counted: %v, want 1", n)
	}

	// Refused by the follower itself: nothing reaches the leader.
	wantRefused(t, reasonBadKey, http.StatusForbidden, func() (int, string) {
		return post(t, f.keyURL("wrong-key-of-twenty-chars"), gridBody(t, writeEvent("forged")), nil)
	})
	if status, _ := post(t, f.url, gridBody(t, writeEvent("no-key")), nil); status != http.StatusUnauthorized {
		t.Errorf("a delivery without the key: status %d, want 401", status)
	}
	if n := len(leader.sink.published()); n != 1 {
		t.Errorf("the leader published %d times, want only the authenticated delivery", n)
	}
}

func TestFollowerHoldsADeliveryUntilALeaderAnswers(t *testing.T) {
	leader := serveWithKey(t)
	known := time.Now().Add(600 * time.Millisecond)
	f, _ := follower(t, 5*time.Second, func() string {
		if time.Now().Before(known) {
			return "" // a takeover: no leader yet
		}
		return leader.hostOf()
	})
	start := time.Now()
	if status, msg := post(t, f.keyURL(testKey), gridBody(t, writeEvent("held")), nil); status != http.StatusOK {
		t.Fatalf("a delivery during a takeover: status %d: %s", status, msg)
	}
	if took := time.Since(start); took < 500*time.Millisecond {
		t.Errorf("answered after %s, before any leader was known", took)
	}
	leader.wantOnePublish(t, cloudchange.Change{ID: "held", Kind: cloudchange.KindWrite, Resource: scaleSet})
}

func TestAFollowerThatTakesOverPublishesWhatItHeld(t *testing.T) {
	f, elected := follower(t, 5*time.Second, func() string { return "" })
	go func() {
		<-time.After(300 * time.Millisecond)
		close(elected)
	}()
	if status, msg := post(t, f.keyURL(testKey), gridBody(t, writeEvent("taken-over")), nil); status != http.StatusOK {
		t.Fatalf("status %d: %s", status, msg)
	}
	f.wantOnePublish(t, cloudchange.Change{ID: "taken-over", Kind: cloudchange.KindWrite, Resource: scaleSet})
}

func TestWithoutALeaderAFollowerAnswers503AfterLeaderWait(t *testing.T) {
	f, _ := follower(t, 300*time.Millisecond, func() string { return "" })
	start := time.Now()
	wantRefused(t, reasonNoLeader, http.StatusServiceUnavailable, func() (int, string) {
		return post(t, f.keyURL(testKey), gridBody(t, writeEvent("orphan")), nil)
	})
	if took := time.Since(start); took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("answered after %s, want after LeaderWait (300ms) and soon after", took)
	}
}

// Two followers that each take the other for the leader (a stale Lease):
// a forwarded delivery is refused, never forwarded back.
func TestAForwardedDeliveryIsNotForwardedAgain(t *testing.T) {
	var a, b *endpoint
	var bLookups atomic.Int32
	a, _ = follower(t, 400*time.Millisecond, func() string { return b.hostOf() })
	b, _ = follower(t, 400*time.Millisecond, func() string { bLookups.Add(1); return a.hostOf() })
	notLeader := counter(t, "refused_total", "reason", reasonNotLeader)
	wantRefused(t, reasonNoLeader, http.StatusServiceUnavailable, func() (int, string) {
		return post(t, a.keyURL(testKey), gridBody(t, writeEvent("ping-pong")), nil)
	})
	if n := bLookups.Load(); n != 0 {
		t.Errorf("the second follower looked for a leader %d times to forward a forwarded delivery, want never", n)
	}
	if n := counter(t, "refused_total", "reason", reasonNotLeader) - notLeader; n < 1 {
		t.Errorf("the second follower refused %v forwarded deliveries as not_leader, want at least 1", n)
	}
	if len(a.sink.published())+len(b.sink.published()) != 0 {
		t.Error("a follower published")
	}
}

// Over TLS a follower forwards only to a leader serving the same
// certificate as itself.
func TestOverTLSAFollowerForwardsOnlyToItsOwnCertificate(t *testing.T) {
	same, other := t.TempDir(), t.TempDir()
	certDir(t, same)
	certDir(t, other)
	start := func(dir string, change func(*Webhook)) (*Webhook, *recordingSink) {
		sink := &recordingSink{}
		w, err := New(Config{BindAddress: "127.0.0.1:0", CertDir: dir, SecretFile: writeSecret(t, testKey), LeaderWait: 500 * time.Millisecond}, sink)
		if err != nil {
			t.Fatal(err)
		}
		change(w)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go func() { _ = w.Start(ctx) }()
		testenv.Eventually(t, 10*time.Second, "the webhook serves", func() string {
			if !w.Health().Up {
				return "health: " + w.Health().Reason
			}
			return ""
		})
		return w, sink
	}
	leader, published := start(same, func(*Webhook) {})
	for _, tc := range []struct {
		name, dir string
		want      int
	}{{"the same certificate", same, http.StatusOK}, {"another certificate", other, http.StatusServiceUnavailable}} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := start(tc.dir, func(w *Webhook) {
				w.AwaitLeader(make(chan struct{}))
				w.FollowLeader(func(context.Context, time.Duration) (string, error) { return leader.Addr(), nil })
			})
			before := len(published.published())
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: insecureTLS()}}
			resp, err := client.Post("https://"+f.Addr()+DefaultPath+"?key="+testKey, "application/json",
				strings.NewReader(string(gridBody(t, writeEvent("tls-"+tc.dir)))))
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if got, want := len(published.published())-before, map[bool]int{true: 1, false: 0}[tc.want == http.StatusOK]; got != want {
				t.Errorf("the leader published %d deliveries, want %d", got, want)
			}
		})
	}
}

// insecureTLS is Event Grid's side in the TLS test: the test certificates
// name no address.
func insecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // test certificates
}
