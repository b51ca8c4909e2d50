package azure

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// getenv reads the environment; a variable for tests.
var getenv = os.Getenv

// NewCredential builds the token credential cfg.Mode asks for. It checks
// that the mode has what it needs (naming the missing field and its
// environment variable) and reads secret and certificate files, but fetches
// no token: the first ARM request does. Secrets never appear in its errors.
func NewCredential(cfg AuthConfig) (azcore.TokenCredential, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	co := cfg.clientOptions()
	noDiscovery := cfg.customAuthority()
	switch cfg.mode() {
	case AuthWorkloadIdentity:
		return azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
			ClientOptions: co, ClientID: cfg.clientID(), TenantID: cfg.tenantID(),
			TokenFilePath: cfg.federatedTokenFile(), DisableInstanceDiscovery: noDiscovery,
		})
	case AuthManagedIdentity:
		o := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: co}
		switch {
		case cfg.ManagedIdentityResourceID != "":
			o.ID = azidentity.ResourceID(cfg.ManagedIdentityResourceID)
		case cfg.ClientID != "":
			o.ID = azidentity.ClientID(cfg.ClientID)
		}
		return azidentity.NewManagedIdentityCredential(o)
	case AuthClientSecret:
		secret, err := cfg.clientSecret()
		if err != nil {
			return nil, err
		}
		return azidentity.NewClientSecretCredential(cfg.tenantID(), cfg.clientID(), secret,
			&azidentity.ClientSecretCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: noDiscovery})
	case AuthClientCertificate:
		return cfg.certificateCredential(co, noDiscovery)
	default:
		return azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{
			ClientOptions: co, TenantID: cfg.TenantID, DisableInstanceDiscovery: noDiscovery,
		})
	}
}

// Validate checks that the mode is known and that the fields (or
// environment variables) it needs are set. It reads no file.
func (a AuthConfig) Validate() error {
	mode := a.mode()
	var errs []error
	need := func(v, field, env string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("auth mode %s needs %s: set AuthConfig.%s or %s", mode, strings.ToLower(splitCamel(field)), field, env))
		}
	}
	switch mode {
	case AuthDefault, AuthManagedIdentity:
	case AuthWorkloadIdentity:
		need(a.tenantID(), "TenantID", EnvTenantID)
		need(a.clientID(), "ClientID", EnvClientID)
		need(a.federatedTokenFile(), "FederatedTokenFile", EnvFederatedTokenFile)
	case AuthClientSecret:
		need(a.tenantID(), "TenantID", EnvTenantID)
		need(a.clientID(), "ClientID", EnvClientID)
		if a.ClientSecret == "" && a.ClientSecretFile == "" && getenv(EnvClientSecret) == "" {
			errs = append(errs, fmt.Errorf("auth mode %s needs a client secret: set AuthConfig.ClientSecretFile (or ClientSecret) or %s", mode, EnvClientSecret))
		}
	case AuthClientCertificate:
		need(a.tenantID(), "TenantID", EnvTenantID)
		need(a.clientID(), "ClientID", EnvClientID)
		need(a.certificateFile(), "CertificateFile", EnvCertificatePath)
	default:
		return fmt.Errorf("unknown auth mode %q: want one of auto, default, workload-identity, managed-identity, client-secret, client-certificate", a.Mode)
	}
	if a.ManagedIdentityResourceID != "" && a.ClientID != "" && mode == AuthManagedIdentity {
		errs = append(errs, errors.New("auth mode managed-identity: set either ClientID or ManagedIdentityResourceID, not both"))
	}
	return errors.Join(errs...)
}

// splitCamel turns "TenantID" into "Tenant ID".
func splitCamel(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' && !(s[i-1] >= 'A' && s[i-1] <= 'Z') {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mode normalises the mode: empty and auto mean default; pod-identity is
// managed identity.
func (a AuthConfig) mode() AuthMode {
	switch m := AuthMode(strings.ToLower(string(a.Mode))); m {
	case "", AuthAuto:
		return AuthDefault
	case "pod-identity":
		return AuthManagedIdentity
	default:
		return m
	}
}

func (a AuthConfig) tenantID() string { return orEnv(a.TenantID, EnvTenantID) }
func (a AuthConfig) clientID() string { return orEnv(a.ClientID, EnvClientID) }
func (a AuthConfig) federatedTokenFile() string {
	return orEnv(a.FederatedTokenFile, EnvFederatedTokenFile)
}
func (a AuthConfig) certificateFile() string { return orEnv(a.CertificateFile, EnvCertificatePath) }

// orEnv returns v, or the environment variable env when v is empty.
func orEnv(v, env string) string {
	if v != "" {
		return v
	}
	return getenv(env)
}

// clientOptions are the azcore options for token requests: the authority
// host and the HTTP client.
func (a AuthConfig) clientOptions() azcore.ClientOptions {
	co := policy.ClientOptions{Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: a.authorityHost()}}
	if a.HTTPClient != nil {
		co.Transport = a.HTTPClient
	}
	return co
}

// clientSecret reads the secret from the field, the file or the
// environment, in that order.
func (a AuthConfig) clientSecret() (string, error) {
	if a.ClientSecret != "" {
		return a.ClientSecret.Reveal(), nil
	}
	if a.ClientSecretFile != "" {
		b, err := os.ReadFile(a.ClientSecretFile)
		if err != nil {
			return "", fmt.Errorf("auth mode client-secret: read client secret file: %w", err)
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return "", fmt.Errorf("auth mode client-secret: client secret file %s is empty", a.ClientSecretFile)
		}
		return s, nil
	}
	return getenv(EnvClientSecret), nil
}

// certificateCredential reads a PEM or PKCS#12 certificate and builds a
// ClientCertificateCredential.
func (a AuthConfig) certificateCredential(co azcore.ClientOptions, noDiscovery bool) (azcore.TokenCredential, error) {
	path := a.certificateFile()
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth mode client-certificate: read certificate file: %w", err)
	}
	password := a.CertificatePassword.Reveal()
	if password == "" {
		password = getenv(EnvCertificatePassword)
	}
	var pw []byte
	if password != "" {
		pw = []byte(password)
	}
	certs, key, err := azidentity.ParseCertificates(data, pw)
	if err != nil {
		return nil, fmt.Errorf("auth mode client-certificate: certificate file %s: %w", path, err)
	}
	return azidentity.NewClientCertificateCredential(a.tenantID(), a.clientID(), certs, key,
		&azidentity.ClientCertificateCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: noDiscovery})
}
