package cli

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/testenv"
)

func TestArmsimCommand(t *testing.T) {
	seed := writeFile(t, "seed.yaml", "subscriptions:\n- id: sub1\n  resourceGroups:\n  - name: rg1\n    virtualMachines:\n    - name: vm1\n")
	cmd := NewArmsimCommand()
	out := &testenv.SyncBuffer{}
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
func waitForURL(t *testing.T, out *testenv.SyncBuffer) string {
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
