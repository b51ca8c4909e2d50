package eventgrid

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// testPeers is a pure stand-in for the replicas' proofs (the operator's
// peers check real tokens with the API server): tokens maps each replica's
// proof to its name; leader returns the leader's address, named "leader".
type testPeers struct {
	self   string
	tokens map[string]string
	leader func() string
}

func (p testPeers) Leader(context.Context, time.Duration) (Peer, error) {
	if p.leader == nil {
		return Peer{}, nil
	}
	if addr := p.leader(); addr != "" {
		return Peer{Addr: addr, Name: "leader"}, nil
	}
	return Peer{}, nil
}

func (p testPeers) Token() (string, error) { return "proof-of-" + p.self, nil }

func (p testPeers) Verify(_ context.Context, token, name string) error {
	who, ok := p.tokens[token]
	if !ok || (name != "" && who != name) {
		return fmt.Errorf("%w: proof of %q, want %q", ErrUntrusted, who, name)
	}
	return nil
}

// replicaProofs are the proofs of the replicas in these tests.
var replicaProofs = map[string]string{"proof-of-leader": "leader", "proof-of-follower": "follower"}

// leading serves a webhook that leads and takes forwarded deliveries.
func leading(t *testing.T) *endpoint {
	t.Helper()
	return serveWith(t, Config{SecretFile: writeSecret(t, testKey)}, func(w *Webhook) {
		w.FollowLeader(testPeers{self: "leader", tokens: replicaProofs})
	})
}

// follower serves a webhook that does not lead and forwards to whatever
// lookup returns, holding deliveries up to wait.
func follower(t *testing.T, wait time.Duration, lookup func() string) (*endpoint, chan struct{}) {
	t.Helper()
	elected := make(chan struct{})
	e := serveWith(t, Config{SecretFile: writeSecret(t, testKey), LeaderWait: wait}, func(w *Webhook) {
		w.AwaitLeader(elected)
		w.FollowLeader(testPeers{self: "follower", tokens: replicaProofs, leader: lookup})
	})
	return e, elected
}

func TestFollowerForwardsToTheLeader(t *testing.T) {
	leader := leading(t)
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
	leader := leading(t)
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
	leader, published := start(same, func(w *Webhook) { w.FollowLeader(testPeers{self: "leader", tokens: replicaProofs}) })
	for _, tc := range []struct {
		name, dir string
		want      int
	}{{"the same certificate", same, http.StatusOK}, {"another certificate", other, http.StatusServiceUnavailable}} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := start(tc.dir, func(w *Webhook) {
				w.AwaitLeader(make(chan struct{}))
				w.FollowLeader(testPeers{self: "follower", tokens: replicaProofs, leader: leader.Addr})
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

// stranger is a server at an address the Lease may be made to name: it
// records what it receives and answers 200 with the proof it is given
// ("" for none).
type stranger struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string // each request's URL and headers, as text
}

func newStranger(t *testing.T, proof string) *stranger {
	s := &stranger{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, fmt.Sprintf("%s %v", r.URL.String(), r.Header))
		s.mu.Unlock()
		if proof != "" {
			rw.Header().Set(PeerHeader, proof)
		}
		rw.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *stranger) addr() string { return strings.TrimPrefix(s.srv.URL, "http://") }

func (s *stranger) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// A follower whose Lease names a stranger's address never hands it the
// caller's credential, and does not relay its answer: without the leader's
// proof, or with another replica's, a 200 is not the leader's.
func TestAFollowerNeitherHandsOnTheCredentialNorRelaysAStranger(t *testing.T) {
	for _, tc := range []struct{ name, proof string }{
		{"no proof", ""},
		{"another replica's proof", "proof-of-follower"},
		{"a made-up proof", "proof-of-nobody"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStranger(t, tc.proof)
			f, _ := follower(t, 600*time.Millisecond, s.addr)
			untrusted := testenv.Counter(t, "tagsync_eventgrid_untrusted_leader_total", nil)
			header := http.Header{"Authorization": {"Bearer caller-token"}, KeyHeader: {testKey}}
			wantRefused(t, reasonNoLeader, http.StatusServiceUnavailable, func() (int, string) {
				return post(t, f.keyURL(testKey), gridBody(t, writeEvent("to-a-stranger")), header)
			})
			seen := s.requests()
			if len(seen) == 0 {
				t.Fatal("the stranger received nothing: the test shows nothing")
			}
			for _, r := range seen {
				if strings.Contains(r, testKey) || strings.Contains(r, "caller-token") {
					t.Errorf("the stranger received the caller's credential: %s", r)
				}
			}
			if n := testenv.Counter(t, "tagsync_eventgrid_untrusted_leader_total", nil) - untrusted; n < 1 {
				t.Errorf("untrusted_leader_total rose by %v, want at least 1", n)
			}
		})
	}
}

// The leader takes a forwarded delivery only with a replica's proof, and
// answers with its own; the caller's credential is neither needed nor
// accepted in its place.
func TestTheLeaderTakesForwardedDeliveriesOnlyFromReplicas(t *testing.T) {
	leader := leading(t)
	forwarded := func(proof string) http.Header {
		h := http.Header{ForwardedHeader: {"1"}}
		if proof != "" {
			h.Set(PeerHeader, proof)
		}
		return h
	}
	wantRefused(t, reasonUnauthenticated, http.StatusUnauthorized, func() (int, string) {
		return post(t, leader.keyURL(testKey), gridBody(t, writeEvent("key-only")), forwarded(""))
	})
	wantRefused(t, reasonBadPeer, http.StatusForbidden, func() (int, string) {
		return post(t, leader.url, gridBody(t, writeEvent("made-up")), forwarded("proof-of-nobody"))
	})
	if n := len(leader.sink.published()); n != 0 {
		t.Fatalf("the leader published %d refused deliveries", n)
	}
	req, err := http.NewRequest(http.MethodPost, leader.url, strings.NewReader(string(gridBody(t, writeEvent("from-a-replica")))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = forwarded("proof-of-follower")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get(PeerHeader) != "proof-of-leader" {
		t.Errorf("a replica's forward: status %d, proof %q; want 200 with the leader's proof", resp.StatusCode, resp.Header.Get(PeerHeader))
	}
	leader.wantOnePublish(t, cloudchange.Change{ID: "from-a-replica", Kind: cloudchange.KindWrite, Resource: scaleSet})
}
