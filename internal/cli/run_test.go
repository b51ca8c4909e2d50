package cli

import (
	"io"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/tagsync/tagsync/internal/cloud/azure"
)

// runArgs runs `tagsync run` with args and returns its error.
func runArgs(t *testing.T, args ...string) error {
	t.Helper()
	return executeTo(t.Context(), io.Discard, io.Discard, []*cobra.Command{NewRunCommand()}, append([]string{"run"}, args...)...)
}

// unreachableKubeconfig writes a kubeconfig for an API server nobody
// serves: enough for checks that happen before the first request.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	return writeFile(t, "kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {token: t}}]
`)
}

// clearAzureEnv empties the variables the Azure credentials read.
func clearAzureEnv(t *testing.T) {
	for _, v := range []string{"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE",
		"AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_CLIENT_CERTIFICATE_PASSWORD", "AZURE_AUTHORITY_HOST"} {
		t.Setenv(v, "")
	}
}

// goFields are Go identifiers of the Azure configuration that an
// operator's error must never show (they are not what one sets).
var goFields = []string{"AuthConfig", "Config.", "TenantID", "ClientID", "ClientSecretFile", "CertificateFile",
	"FederatedTokenFile", "ManagedIdentityResourceID", "AuthorityHost", "ARMEndpoint"}

// TestRunRefusesBadFlagsNamingThem: values that cannot work are refused
// before anything starts, each error naming the flag (and environment
// variable) to fix and no Go field.
func TestRunRefusesBadFlagsNamingThem(t *testing.T) {
	clearAzureEnv(t)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"negative ARM read budget", []string{"--azure-read-qps=-1"}, []string{"--azure-read-qps -1 is negative", "0 for the provider's default"}},
		{"negative ARM write budget", []string{"--azure-write-qps=-0.5"}, []string{"--azure-write-qps -0.5 is negative"}},
		{"negative AWS read budget", []string{"--aws-read-qps=-1"}, []string{"--aws-read-qps -1 is negative"}},
		{"negative Kubernetes QPS", []string{"--kube-api-qps=-5"}, []string{"--kube-api-qps -5 is negative"}},
		{"negative Kubernetes burst", []string{"--kube-api-burst=-1"}, []string{"--kube-api-burst -1 is negative"}},
		{"all at once", []string{"--kube-api-qps=-1", "--azure-read-qps=-1"}, []string{"--kube-api-qps", "--azure-read-qps"}},
		{"ARM endpoint without scheme", []string{"--azure-arm-endpoint=management.azure.com"},
			[]string{`--azure-arm-endpoint "management.azure.com" is not an absolute http(s) URL`}},
		{"ARM endpoint with another scheme", []string{"--azure-arm-endpoint=ftp://example.com"}, []string{"--azure-arm-endpoint"}},
		{"ARM endpoint over http", []string{"--azure-arm-endpoint=http://127.0.0.1:8080"}, []string{"--azure-allow-insecure-http"}},
		{"authority host without scheme", []string{"--azure-authority-host=login.microsoftonline.us"},
			[]string{`--azure-authority-host or $AZURE_AUTHORITY_HOST "login.microsoftonline.us" is not an absolute http(s) URL`}},
		{"authority host over http", []string{"--azure-authority-host=http://127.0.0.1"}, []string{"must use https"}},
		{"client secret missing", []string{"--azure-auth-mode=client-secret"}, []string{
			"needs the tenant ID: set --azure-tenant-id or $AZURE_TENANT_ID",
			"needs the client ID: set --azure-client-id or $AZURE_CLIENT_ID",
			"needs the client secret: set --azure-client-secret-file or $AZURE_CLIENT_SECRET"}},
		{"workload identity token missing", []string{"--azure-auth-mode=workload-identity", "--azure-tenant-id=t", "--azure-client-id=c"},
			[]string{"--azure-federated-token-file or $AZURE_FEDERATED_TOKEN_FILE"}},
		{"unknown auth mode", []string{"--azure-auth-mode=kerberos"}, []string{`--azure-auth-mode "kerberos" is not a mode`}},
		{"metrics certificate missing", []string{"--metrics-cert-dir=" + t.TempDir()}, []string{"has no tls.crt", "has no tls.key"}},
		{"metrics certificate without HTTPS", []string{"--metrics-secure=false", "--metrics-cert-dir=/x"}, []string{"--metrics-cert-dir is for the HTTPS metrics endpoint"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := runArgs(t, append(c.args, "--kubeconfig", filepath.Join(t.TempDir(), "never-read"))...)
			if err == nil {
				t.Fatalf("tagsync run %v started, want it refused", c.args)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, f := range goFields {
				if strings.Contains(err.Error(), f) {
					t.Errorf("error %q names the Go field %s", err, f)
				}
			}
		})
	}
}

// TestRunCredentialFileErrorsNameTheFlag: a secret file that cannot be read
// is reported when the provider is built, naming the flag.
func TestRunCredentialFileErrorsNameTheFlag(t *testing.T) {
	clearAzureEnv(t)
	missing := filepath.Join(t.TempDir(), "client-secret")
	err := runArgs(t, "--kubeconfig", unreachableKubeconfig(t), "--leader-elect=false", "--metrics-bind-address=0",
		"--health-probe-bind-address=0", "--azure-auth-mode=client-secret", "--azure-tenant-id=t", "--azure-client-id=c",
		"--azure-client-secret-file="+missing)
	if err == nil || !strings.Contains(err.Error(), "--azure-client-secret-file") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("error = %v, want one naming --azure-client-secret-file and the file", err)
	}
	for _, f := range goFields {
		if strings.Contains(err.Error(), f) {
			t.Errorf("error %q names the Go field %s", err, f)
		}
	}
}

// TestRunMetricsDefaults: HTTPS on :8443 by default; --metrics-secure=false
// serves plain HTTP on :8080 unless an address is given.
func TestRunMetricsDefaults(t *testing.T) {
	clearAzureEnv(t)
	cases := []struct {
		args   []string
		addr   string
		secure bool
	}{
		{nil, ":8443", true},
		{[]string{"--metrics-secure=false"}, ":8080", false},
		{[]string{"--metrics-secure=false", "--metrics-bind-address=127.0.0.1:9090"}, "127.0.0.1:9090", false},
		{[]string{"--metrics-bind-address=0"}, "0", true},
	}
	for _, c := range cases {
		cmd, f := newRunCommand()
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		if err := f.complete(cmd); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if f.op.MetricsAddr != c.addr || f.op.MetricsSecure != c.secure || f.op.EnableHTTP2 {
			t.Errorf("%v: metrics on %q secure=%v http2=%v, want %q secure=%v http2=false", c.args, f.op.MetricsAddr, f.op.MetricsSecure, f.op.EnableHTTP2, c.addr, c.secure)
		}
	}
}

func TestRunRejectsMissingKubeconfig(t *testing.T) {
	err := runArgs(t, "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	if err == nil || !strings.Contains(err.Error(), "Kubernetes client config") {
		t.Fatalf("error = %v, want one about the client config", err)
	}
}

func TestRunCaFileMustHoldPEM(t *testing.T) {
	file := writeFile(t, "ca.crt", "not a certificate")
	if _, err := azure.HTTPClientTrusting(file); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("error = %v, want one saying the file holds no PEM certificate", err)
	}
}

func TestMemoryLimitFlag(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	if err := applyMemoryLimit("lots"); err == nil || !strings.Contains(err.Error(), "positive quantity") {
		t.Fatalf("error = %v, want one asking for a quantity", err)
	}
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	if err := applyMemoryLimit("120Mi"); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 120<<20 {
		t.Fatalf("memory limit = %d, want %d", got, 120<<20)
	}
}
