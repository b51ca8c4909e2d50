package eventgrid

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/testenv"
)

func TestConfigValidate(t *testing.T) {
	cases := map[string]struct {
		cfg  Config
		want string
	}{
		"no authentication":    {Config{BindAddress: ":9443"}, "no authentication configured"},
		"tenant, no audience":  {Config{BindAddress: ":9443", TenantID: "t"}, "both TenantID and Audience"},
		"audience, no tenant":  {Config{BindAddress: ":9443", Audience: "a"}, "both TenantID and Audience"},
		"no address":           {Config{SecretFile: "/k"}, "BindAddress is empty"},
		"relative path":        {Config{BindAddress: ":9443", SecretFile: "/k", Path: "eventgrid"}, "does not begin with /"},
		"authority not a URL":  {Config{BindAddress: ":9443", TenantID: "t", Audience: "a", Authority: "login"}, "not an http(s) URL"},
		"negative max age":     {Config{BindAddress: ":9443", SecretFile: "/k", MaxAge: -time.Second}, "must not be negative"},
		"secret file":          {Config{BindAddress: ":9443", SecretFile: "/k"}, ""},
		"tokens":               {Config{BindAddress: ":9443", TenantID: "t", Audience: "api://a"}, ""},
		"both modes, defaults": {Config{BindAddress: ":9443", SecretFile: "/k", TenantID: "t", Audience: "a"}, ""},
		"allowed callers":      {Config{BindAddress: ":9443", TenantID: "t", Audience: "a", AllowedCallers: []string{EventGridAppID}}, ""},
		"callers, no tokens":   {Config{BindAddress: ":9443", SecretFile: "/k", AllowedCallers: []string{EventGridAppID}}, "AllowedCallers need Entra ID"},
		"caller not an app ID": {Config{BindAddress: ":9443", TenantID: "t", Audience: "a", AllowedCallers: []string{"api://eventgrid"}}, "not an application (client) ID"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := c.cfg.Validate()
			if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Errorf("Validate() = %v, want %q", err, c.want)
			}
		})
	}
}

func TestNewRefusesUnusableSecretFiles(t *testing.T) {
	sink := &recordingSink{}
	for name, path := range map[string]string{
		"missing":      filepath.Join(t.TempDir(), "absent"),
		"empty":        writeSecret(t, "\n\n"),
		"short secret": writeSecret(t, testKey+"\nshort\n"),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(Config{BindAddress: ":0", SecretFile: path}, sink); err == nil {
				t.Error("New accepted it")
			} else if strings.Contains(err.Error(), testKey) {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
	if _, err := New(Config{BindAddress: ":0", SecretFile: writeSecret(t, testKey)}, nil); err == nil {
		t.Error("New accepted a nil sink")
	}
}

// certDir writes a self-signed certificate and its key as tls.crt and
// tls.key (both files hold both PEM blocks; each reader takes its own) and
// returns the certificate.
func certDir(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	cert, key := testenv.SelfSignedCert(t, "tagsync-eventgrid")
	pem := testenv.CertKeyPEM(t, cert, key)
	for _, name := range []string{"tls.key", "tls.crt"} {
		if err := os.WriteFile(filepath.Join(dir, name), pem, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert
}

// servedCert connects to addr and returns the certificate it presents.
func servedCert(addr string) (*x509.Certificate, error) {
	// The test certificate names no address; the test compares it whole.
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // compared below
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

func TestStartServesTLSReloadsTheCertificateAndStops(t *testing.T) {
	dir := t.TempDir()
	first := certDir(t, dir)
	sink := &recordingSink{}
	w, err := New(Config{BindAddress: "127.0.0.1:0", CertDir: dir, SecretFile: writeSecret(t, testKey)}, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Start(ctx) }()
	t.Cleanup(cancel)
	testenv.Eventually(t, 10*time.Second, "the webhook serves", func() string {
		if !w.Health().Up {
			return "health: " + w.Health().Reason
		}
		return ""
	})

	cert, err := servedCert(w.Addr())
	if err != nil || !cert.Equal(first) {
		t.Fatalf("served certificate: %v, want the one in the directory", err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // certificate checked above
	resp, err := client.Post("https://"+w.Addr()+DefaultPath+"?key="+testKey, "application/json",
		bytes.NewReader(gridBody(t, writeEvent("over-tls"))))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(sink.published()) != 1 {
		t.Fatalf("a delivery over TLS: status %d, publishes %d", resp.StatusCode, len(sink.published()))
	}

	second := certDir(t, dir)
	testenv.Eventually(t, 20*time.Second, "the new certificate is served", func() string {
		if cert, err := servedCert(w.Addr()); err != nil || !cert.Equal(second) {
			return "still the old certificate"
		}
		return ""
	})

	cancel()
	if err := returned(t, stopped); err != nil {
		t.Fatalf("Start returned %v after its context ended", err)
	}
	if h := w.Health(); h.Up || w.Addr() != "" {
		t.Errorf("after the stop: health %+v, address %q", h, w.Addr())
	}
}

func TestStartServesPlainHTTPWithoutCertDir(t *testing.T) {
	sink := &recordingSink{}
	w, err := New(Config{BindAddress: "127.0.0.1:0", SecretFile: writeSecret(t, testKey)}, sink)
	if err != nil {
		t.Fatal(err)
	}
	var src cloudchange.Source = w
	if src.Name() != "eventgrid" || src.Health().Up {
		t.Fatalf("before Start: name %q, health %+v", src.Name(), src.Health())
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Start(ctx) }()
	testenv.Eventually(t, 10*time.Second, "the webhook serves", func() string {
		if w.Addr() == "" {
			return "no address yet"
		}
		return ""
	})
	if status, msg := post(t, "http://"+w.Addr()+DefaultPath+"?key="+testKey, gridBody(t, writeEvent("plain")), nil); status != http.StatusOK {
		t.Fatalf("status %d: %s", status, msg)
	}
	cancel()
	if err := returned(t, stopped); err != nil {
		t.Fatal(err)
	}
}

// returned waits for Start's result.
func returned(t *testing.T, stopped <-chan error) (err error) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "Start returns after its context ended", func() string {
		select {
		case err = <-stopped:
			return ""
		default:
			return "still serving"
		}
	})
	return err
}

func TestStartFailsWhenTheAddressIsTaken(t *testing.T) {
	sink := &recordingSink{}
	first, _ := New(Config{BindAddress: "127.0.0.1:0", SecretFile: writeSecret(t, testKey)}, sink)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = first.Start(ctx) }()
	testenv.Eventually(t, 10*time.Second, "the first webhook serves", func() string {
		if first.Addr() == "" {
			return "no address yet"
		}
		return ""
	})
	second, _ := New(Config{BindAddress: first.Addr(), SecretFile: writeSecret(t, testKey)}, sink)
	if err := second.Start(ctx); err == nil {
		t.Fatal("Start on a taken address returned nil")
	}
	if h := second.Health(); h.Up || h.Reason == "" {
		t.Errorf("health after a failed start: %+v", h)
	}
}

func TestStartFailsWithoutCertificateFiles(t *testing.T) {
	w, err := New(Config{BindAddress: "127.0.0.1:0", CertDir: t.TempDir(), SecretFile: writeSecret(t, testKey)}, &recordingSink{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Start with an empty certificate directory: %v, want a certificate error", err)
	}
	if h := w.Health(); h.Up {
		t.Errorf("health after a failed start: %+v", h)
	}
}
