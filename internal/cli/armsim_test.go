package cli

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/testenv"
)

// syncBuffer is a goroutine-safe output buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestArmsimCommand(t *testing.T) {
	seed := filepath.Join(t.TempDir(), "seed.yaml")
	if err := os.WriteFile(seed, []byte("subscriptions:\n- id: sub1\n  resourceGroups:\n  - name: rg1\n    virtualMachines:\n    - name: vm1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := NewArmsimCommand()
	out := &syncBuffer{}
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs([]string{"--listen", "127.0.0.1:0", "--tls=false", "--seed", seed, "--page-size", "5"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	url := waitForURL(t, out)
	resp, err := http.Get(url + "/_admin/state")
	if err != nil {
		t.Fatal(err)
	}
	body := new(bytes.Buffer)
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), "vm1") {
		t.Errorf("seed not loaded: %s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "InsecureAllowCredentialWithHTTP") {
		t.Errorf("output lacks client settings:\n%s", out)
	}
}

var urlRE = regexp.MustCompile(`armsim listening on (\S+)`)

// waitForURL polls the command output until it names the endpoint.
func waitForURL(t *testing.T, out *syncBuffer) string {
	t.Helper()
	var url string
	testenv.Eventually(t, 20*time.Second, "armsim printing its endpoint", func() string {
		if m := urlRE.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
			return ""
		}
		return "output so far:\n" + out.String()
	})
	return url
}

func TestArmsimCommandRejectsBadFlags(t *testing.T) {
	cmd := NewArmsimCommand()
	cmd.SetArgs([]string{"--error-rate", "2"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "error-rate") {
		t.Errorf("err = %v", err)
	}
}
