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
// that the mode has what it needs (naming the missing flag and its
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

// Validate checks that the mode is known and that the settings it needs are
// given, by flag or environment variable. Its errors name both, e.g.
// "--azure-tenant-id or $AZURE_TENANT_ID". It reads no file.
func (a AuthConfig) Validate() error {
	mode := a.mode()
	var errs []error
	need := func(v, what, flag, env string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s %s needs the %s: set %s or $%s", FlagAuthMode, mode, what, flag, env))
		}
	}
	switch mode {
	case AuthDefault, AuthManagedIdentity:
	case AuthWorkloadIdentity:
		need(a.tenantID(), "tenant ID", FlagTenantID, EnvTenantID)
		need(a.clientID(), "client ID", FlagClientID, EnvClientID)
		need(a.federatedTokenFile(), "federated token file", FlagFederatedTokenFile, EnvFederatedTokenFile)
	case AuthClientSecret:
		need(a.tenantID(), "tenant ID", FlagTenantID, EnvTenantID)
		need(a.clientID(), "client ID", FlagClientID, EnvClientID)
		if a.ClientSecret == "" {
			need(orEnv(a.ClientSecretFile, EnvClientSecret), "client secret", FlagClientSecretFile, EnvClientSecret)
		}
	case AuthClientCertificate:
		need(a.tenantID(), "tenant ID", FlagTenantID, EnvTenantID)
		need(a.clientID(), "client ID", FlagClientID, EnvClientID)
		need(a.certificateFile(), "client certificate file", FlagCertificateFile, EnvCertificatePath)
	default:
		return fmt.Errorf("%s %q is not a mode: use auto, default, workload-identity, managed-identity, client-secret or client-certificate", FlagAuthMode, a.Mode)
	}
	if a.ManagedIdentityResourceID != "" && a.ClientID != "" && mode == AuthManagedIdentity {
		errs = append(errs, fmt.Errorf("%s managed-identity: choose the identity by %s or by its resource ID, not both", FlagAuthMode, FlagClientID))
	}
	return errors.Join(errs...)
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
			return "", fmt.Errorf("reading the client secret (%s): %w", FlagClientSecretFile, err)
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return "", fmt.Errorf("%s %s is empty: put the application's client secret in it", FlagClientSecretFile, a.ClientSecretFile)
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
		return nil, fmt.Errorf("reading the client certificate (%s or $%s): %w", FlagCertificateFile, EnvCertificatePath, err)
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
		return nil, fmt.Errorf("the client certificate %s (%s or $%s) holds no certificate with its private key "+
			"(PEM, or PKCS#12 with the password in $%s): %w", path, FlagCertificateFile, EnvCertificatePath, EnvCertificatePassword, err)
	}
	return azidentity.NewClientCertificateCredential(a.tenantID(), a.clientID(), certs, key,
		&azidentity.ClientCertificateCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: noDiscovery})
}
