package azure

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/testenv"
)

// clearAzureEnv empties the variables azidentity reads.
func clearAzureEnv(t *testing.T) {
	for _, v := range []string{EnvClientID, EnvTenantID, EnvClientSecret, EnvFederatedTokenFile, EnvCertificatePath,
		EnvCertificatePassword, EnvAuthorityHost, "IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT", "MSI_SECRET"} {
		t.Setenv(v, "")
	}
}

// writeFile writes a file in a temporary directory.
func writeFile(t *testing.T, name string, data []byte) string {
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// selfSignedPEM returns a certificate and its RSA key, PEM encoded.
func selfSignedPEM(t *testing.T) []byte {
	cert, key := testenv.SelfSignedCert(t, "tagsync-test")
	return testenv.CertKeyPEM(t, cert, key)
}

// TestCredentialModes gets a token in each mode from armsim over HTTPS and
// uses it for an ARM read through a Provider built from the AuthConfig.
func TestCredentialModes(t *testing.T) {
	env := startArmsim(t)
	s := env.Server
	env.vm("rg", armsim.VirtualMachine{Name: "vm"})
	host := s.URL()
	jwt := []byte("eyJhbGciOiJub25lIn0.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGFnc3luYzp0YWdzeW5jIn0.c2ln")

	cases := []struct {
		name  string
		auth  AuthConfig
		setup func(t *testing.T)
	}{
		{name: "client-secret from file", auth: AuthConfig{Mode: AuthClientSecret, TenantID: s.TenantID(), ClientID: armsimtest.ClientID,
			ClientSecretFile: writeFile(t, "secret", []byte(armsimtest.ClientSecret+"\n")), AuthorityHost: host}},
		{name: "client-secret from env", auth: AuthConfig{Mode: AuthClientSecret, AuthorityHost: host}, setup: func(t *testing.T) {
			t.Setenv(EnvTenantID, s.TenantID())
			t.Setenv(EnvClientID, armsimtest.ClientID)
			t.Setenv(EnvClientSecret, armsimtest.ClientSecret)
		}},
		{name: "workload identity from env", auth: AuthConfig{Mode: AuthWorkloadIdentity, AuthorityHost: host}, setup: func(t *testing.T) {
			t.Setenv(EnvTenantID, s.TenantID())
			t.Setenv(EnvClientID, armsimtest.ClientID)
			t.Setenv(EnvFederatedTokenFile, writeFile(t, "token", jwt))
		}},
		{name: "workload identity explicit", auth: AuthConfig{Mode: AuthWorkloadIdentity, TenantID: s.TenantID(), ClientID: armsimtest.ClientID,
			FederatedTokenFile: writeFile(t, "token", jwt), AuthorityHost: host}},
		{name: "client certificate", auth: AuthConfig{Mode: AuthClientCertificate, TenantID: s.TenantID(), ClientID: armsimtest.ClientID,
			CertificateFile: writeFile(t, "cert.pem", selfSignedPEM(t)), AuthorityHost: host}},
		{name: "managed identity", auth: AuthConfig{Mode: AuthManagedIdentity}, setup: func(t *testing.T) {
			for k, v := range s.ManagedIdentityEnv() {
				t.Setenv(k, v)
			}
		}},
		{name: "default chain (environment service principal)", auth: AuthConfig{Mode: AuthAuto, AuthorityHost: host}, setup: func(t *testing.T) {
			t.Setenv(EnvTenantID, s.TenantID())
			t.Setenv(EnvClientID, armsimtest.ClientID)
			t.Setenv(EnvClientSecret, armsimtest.ClientSecret)
		}},
		{name: "pod identity alias", auth: AuthConfig{Mode: "pod-identity"}, setup: func(t *testing.T) {
			for k, v := range s.ManagedIdentityEnv() {
				t.Setenv(k, v)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clearAzureEnv(t)
			if c.setup != nil {
				c.setup(t)
			}
			auth := c.auth
			auth.HTTPClient = env.HTTPClient
			cred, err := NewCredential(auth)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := cred.GetToken(t.Context(), policy.TokenRequestOptions{Scopes: []string{host + "/.default"}})
			if err != nil || tok.Token == "" {
				t.Fatalf("GetToken: %v", err)
			}
			cfg := armsimConfig(env)
			cfg.Auth = c.auth // HTTPClient comes from cfg.HTTPClient
			p := newTestProvider(t, env, &cfg)
			snap, err := p.Snapshot(t.Context(), []cloud.Node{node("vm", vmProviderID(env.SubscriptionID, "rg", "vm"), nil)}, cloud.ReadOptions{})
			if err != nil || !snap.Placements["vm"].Managed {
				t.Fatalf("Snapshot: %v %+v", err, snap.Placements["vm"])
			}
		})
	}
}

func TestAuthConfigValidation(t *testing.T) {
	clearAzureEnv(t)
	cases := []struct {
		auth AuthConfig
		want []string // substrings of the error; nil = valid
	}{
		{AuthConfig{}, nil},
		{AuthConfig{Mode: AuthAuto}, nil},
		{AuthConfig{Mode: AuthManagedIdentity, ClientID: "c"}, nil},
		{AuthConfig{Mode: AuthManagedIdentity, ClientID: "c", ManagedIdentityResourceID: "/x"}, []string{"by --azure-client-id or by its resource ID, not both"}},
		{AuthConfig{Mode: AuthClientSecret}, []string{"--azure-auth-mode client-secret needs the tenant ID: set --azure-tenant-id or $AZURE_TENANT_ID",
			"needs the client ID: set --azure-client-id or $AZURE_CLIENT_ID", "needs the client secret: set --azure-client-secret-file or $AZURE_CLIENT_SECRET"}},
		{AuthConfig{Mode: AuthClientSecret, TenantID: "t", ClientID: "c", ClientSecretFile: "/f"}, nil},
		{AuthConfig{Mode: AuthClientSecret, TenantID: "t", ClientID: "c", ClientSecret: "s"}, nil},
		{AuthConfig{Mode: AuthWorkloadIdentity, TenantID: "t", ClientID: "c"}, []string{"workload-identity needs the federated token file: set --azure-federated-token-file or $AZURE_FEDERATED_TOKEN_FILE"}},
		{AuthConfig{Mode: AuthClientCertificate, TenantID: "t"}, []string{"--azure-client-id", "client certificate file: set --azure-client-certificate-file or $AZURE_CLIENT_CERTIFICATE_PATH"}},
		{AuthConfig{Mode: "kerberos"}, []string{`--azure-auth-mode "kerberos" is not a mode`, "workload-identity"}},
	}
	for _, c := range cases {
		err := c.auth.Validate()
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%s: unexpected error %v", c.auth.Mode, err)
		case c.want != nil && (err == nil || !containsAll(err.Error(), c.want...)):
			t.Errorf("%s: error %v, want it to mention %q", c.auth.Mode, err, c.want)
		}
	}
	// Files are read when the credential is built, with the path in the error.
	_, err := NewCredential(AuthConfig{Mode: AuthClientSecret, TenantID: "t", ClientID: "c", ClientSecretFile: "/nonexistent/secret"})
	if err == nil || !containsAll(err.Error(), "/nonexistent/secret", "--azure-client-secret-file") {
		t.Errorf("missing secret file: %v", err)
	}
	_, err = NewCredential(AuthConfig{Mode: AuthClientCertificate, TenantID: "t", ClientID: "c", CertificateFile: writeFile(t, "bad.pem", []byte("nope"))})
	if err == nil || !containsAll(err.Error(), "bad.pem", "--azure-client-certificate-file or $AZURE_CLIENT_CERTIFICATE_PATH") {
		t.Errorf("bad certificate: %v", err)
	}
	if _, err := NewProvider(t.Context(), Config{Auth: AuthConfig{Mode: AuthClientSecret}}); err == nil || !strings.Contains(err.Error(), "credential") {
		t.Errorf("NewProvider with invalid auth: %v", err)
	}
	if _, err := NewProvider(t.Context(), Config{}, WithWriteMethod("PUT")); err == nil || !strings.Contains(err.Error(), "write method") {
		t.Errorf("NewProvider with a bad write method: %v", err)
	}
}

// TestConfigErrorsNameFlagsNotFields: every configuration error names the
// `tagsync run` flags (and environment variables) to set, never a Go field.
func TestConfigErrorsNameFlagsNotFields(t *testing.T) {
	clearAzureEnv(t)
	empty := writeFile(t, "empty-secret", []byte("\n"))
	errs := map[string]error{}
	for _, mode := range []AuthMode{AuthWorkloadIdentity, AuthClientSecret, AuthClientCertificate, "kerberos"} {
		errs[string(mode)] = AuthConfig{Mode: mode}.Validate()
	}
	errs["both identities"] = AuthConfig{Mode: AuthManagedIdentity, ClientID: "c", ManagedIdentityResourceID: "/x"}.Validate()
	_, errs["empty secret file"] = NewCredential(AuthConfig{Mode: AuthClientSecret, TenantID: "t", ClientID: "c", ClientSecretFile: empty})
	_, errs["missing certificate"] = NewCredential(AuthConfig{Mode: AuthClientCertificate, TenantID: "t", ClientID: "c", CertificateFile: "/nonexistent.pem"})
	errs["ARM endpoint"] = Config{ARMEndpoint: "management.azure.com"}.Validate()
	errs["authority host"] = Config{Auth: AuthConfig{AuthorityHost: "login"}}.Validate()
	fields := []string{"AuthConfig", "Config.", "TenantID", "ClientID", "ClientSecret", "CertificateFile", "FederatedTokenFile",
		"ManagedIdentityResourceID", "AuthorityHost", "ARMEndpoint"}
	for name, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "--azure-") {
			t.Errorf("%s: error %v, want one naming a --azure- flag", name, err)
			continue
		}
		for _, f := range fields {
			if strings.Contains(err.Error(), f) {
				t.Errorf("%s: error %q names the Go field %s", name, err, f)
			}
		}
	}
}

// TestConfigValidateEndpoints: the ARM endpoint and the authority host must
// be absolute URLs; plain http is refused unless allowed (ARM) or at all
// (the authority, which Entra ID clients refuse).
func TestConfigValidateEndpoints(t *testing.T) {
	clearAzureEnv(t)
	cases := []struct {
		name string
		cfg  Config
		env  string // $AZURE_AUTHORITY_HOST
		want string // substring of the error; "" = valid
	}{
		{"defaults", Config{}, "", ""},
		{"sovereign cloud", Config{ARMEndpoint: "https://management.usgovcloudapi.net/", Auth: AuthConfig{AuthorityHost: "https://login.microsoftonline.us"}}, "", ""},
		{"simulator over http", Config{ARMEndpoint: "http://127.0.0.1:8080", AllowInsecureHTTP: true}, "", ""},
		{"no scheme", Config{ARMEndpoint: "management.azure.com"}, "", `--azure-arm-endpoint "management.azure.com" is not an absolute http(s) URL`},
		{"no host", Config{ARMEndpoint: "https://"}, "", "--azure-arm-endpoint"},
		{"other scheme", Config{ARMEndpoint: "ftp://management.azure.com"}, "", "not an absolute http(s) URL"},
		{"unparsable", Config{ARMEndpoint: "https://[::1"}, "", "not an absolute http(s) URL"},
		{"http without the flag", Config{ARMEndpoint: "http://127.0.0.1:8080"}, "", "add --azure-allow-insecure-http"},
		{"authority without scheme", Config{Auth: AuthConfig{AuthorityHost: "login.microsoftonline.us"}}, "", "--azure-authority-host or $AZURE_AUTHORITY_HOST"},
		{"authority over http", Config{AllowInsecureHTTP: true, Auth: AuthConfig{AuthorityHost: "http://127.0.0.1"}}, "", "must use https"},
		{"authority from the environment", Config{}, "login", `$AZURE_AUTHORITY_HOST "login" is not an absolute`},
		{"auth checked too", Config{Auth: AuthConfig{Mode: AuthClientSecret}}, "", "--azure-tenant-id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(EnvAuthorityHost, c.env)
			err := c.cfg.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestConfigRedaction(t *testing.T) {
	const secret, password = "s3cr3t-VALUE", "p4ssw0rd-VALUE"
	cfg := Config{
		ARMEndpoint:         "https://management.azure.com",
		DefaultSubscription: "sub",
		Auth: AuthConfig{Mode: AuthClientSecret, TenantID: "tenant", ClientID: "client",
			ClientSecret: secret, CertificatePassword: password},
	}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", cfg, "auth", cfg.Auth)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "cfg", cfg, "auth", cfg.Auth)
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"String": cfg.String(), "%v": fmt.Sprintf("%v", cfg), "%+v": fmt.Sprintf("%+v", cfg), "%#v": fmt.Sprintf("%#v", cfg),
		"auth %+v": fmt.Sprintf("%+v", cfg.Auth), "auth %#v": fmt.Sprintf("%#v", cfg.Auth), "pointer %+v": fmt.Sprintf("%+v", &cfg),
		"secret %s": fmt.Sprintf("%s %v %q", cfg.Auth.ClientSecret, cfg.Auth.ClientSecret, cfg.Auth.ClientSecret),
		"json":      string(js), "slog": logged.String(),
	}
	for name, out := range outputs {
		if strings.Contains(out, secret) || strings.Contains(out, password) {
			t.Errorf("%s leaks a secret: %s", name, out)
		}
		if name != "secret %s" && !strings.Contains(out, "client") {
			t.Errorf("%s lost the non-secret fields: %s", name, out)
		}
	}
	if !strings.Contains(cfg.String(), cloud.Redacted) {
		t.Errorf("String() = %s, want %s in place of the secret", cfg.String(), cloud.Redacted)
	}
	if cfg.Auth.ClientSecret.Reveal() != secret {
		t.Error("Reveal lost the secret")
	}
}

func TestCloudConfiguration(t *testing.T) {
	pub := Config{}.CloudConfiguration()
	if arm := pub.Services["resourceManager"]; arm.Endpoint != "https://management.azure.com" || arm.Audience != "https://management.core.windows.net/" ||
		pub.ActiveDirectoryAuthorityHost != "https://login.microsoftonline.com/" {
		t.Errorf("public cloud = %+v", pub)
	}
	custom := Config{ARMEndpoint: "https://127.0.0.1:8443/", Auth: AuthConfig{AuthorityHost: "https://127.0.0.1:8443"}}
	cc := custom.CloudConfiguration()
	if arm := cc.Services["resourceManager"]; arm.Endpoint != "https://127.0.0.1:8443" || arm.Audience != "https://127.0.0.1:8443" ||
		cc.ActiveDirectoryAuthorityHost != "https://127.0.0.1:8443/" {
		t.Errorf("custom cloud = %+v", cc)
	}
	if !custom.Auth.customAuthority() || (AuthConfig{AuthorityHost: "https://login.microsoftonline.us"}).customAuthority() {
		t.Error("customAuthority wrong")
	}
}
