package azure

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"

	tscloud "github.com/tagsync/tagsync/internal/cloud"
)

// AuthMode chooses how the provider authenticates to Microsoft Entra ID.
type AuthMode string

// The authentication modes.
const (
	// AuthAuto is AuthDefault (also the empty mode).
	AuthAuto AuthMode = "auto"
	// AuthDefault is azidentity's DefaultAzureCredential chain
	// (environment, workload identity, managed identity, Azure CLI, ...).
	AuthDefault AuthMode = "default"
	// AuthWorkloadIdentity exchanges a federated (Kubernetes service account)
	// token: AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE or
	// the explicit fields.
	AuthWorkloadIdentity AuthMode = "workload-identity"
	// AuthManagedIdentity uses the VM's / pod's managed identity, system- or
	// user-assigned (ClientID or ManagedIdentityResourceID). It also covers
	// AAD Pod Identity, which serves the same IMDS endpoint.
	AuthManagedIdentity AuthMode = "managed-identity"
	// AuthClientSecret is a service principal with a secret.
	AuthClientSecret AuthMode = "client-secret"
	// AuthClientCertificate is a service principal with a certificate
	// (PEM or PKCS#12 file).
	AuthClientCertificate AuthMode = "client-certificate"
)

// Environment variables read when the matching AuthConfig field is empty,
// named as azidentity names them.
const (
	EnvClientID            = "AZURE_CLIENT_ID"
	EnvTenantID            = "AZURE_TENANT_ID"
	EnvClientSecret        = "AZURE_CLIENT_SECRET"
	EnvFederatedTokenFile  = "AZURE_FEDERATED_TOKEN_FILE"
	EnvCertificatePath     = "AZURE_CLIENT_CERTIFICATE_PATH"
	EnvCertificatePassword = "AZURE_CLIENT_CERTIFICATE_PASSWORD"
	EnvAuthorityHost       = "AZURE_AUTHORITY_HOST"
)

// The `tagsync run` flags that set the Config and AuthConfig fields. Errors
// about the configuration name these (and the Env* variables), never Go
// fields, so that an operator reading one knows what to set.
const (
	FlagAuthMode           = "--azure-auth-mode"
	FlagTenantID           = "--azure-tenant-id"
	FlagClientID           = "--azure-client-id"
	FlagClientSecretFile   = "--azure-client-secret-file"
	FlagCertificateFile    = "--azure-client-certificate-file"
	FlagFederatedTokenFile = "--azure-federated-token-file"
	FlagAuthorityHost      = "--azure-authority-host"
	FlagARMEndpoint        = "--azure-arm-endpoint"
	FlagARMAudience        = "--azure-arm-audience"
	FlagSubscription       = "--azure-subscription"
	FlagAllowInsecureHTTP  = "--azure-allow-insecure-http"
)

// Secret is a credential value that prints, formats and marshals as
// "[redacted]" (see tagsync's cloud.Secret).
type Secret = tscloud.Secret

// AuthConfig says how to obtain Entra ID tokens. Empty fields fall back to
// the azidentity environment variables (Env*).
type AuthConfig struct {
	// Mode is the authentication mode; empty means AuthAuto.
	Mode AuthMode `json:"mode,omitempty"`
	// TenantID is the Entra ID tenant (AZURE_TENANT_ID).
	TenantID string `json:"tenantID,omitempty"`
	// ClientID is the application (client) ID, or the user-assigned managed
	// identity's client ID (AZURE_CLIENT_ID).
	ClientID string `json:"clientID,omitempty"`
	// ClientSecret is a secret given directly; prefer ClientSecretFile.
	ClientSecret Secret `json:"clientSecret,omitempty"`
	// ClientSecretFile is a file holding the client secret (e.g. a mounted
	// Kubernetes Secret); AZURE_CLIENT_SECRET is used when neither is set.
	ClientSecretFile string `json:"clientSecretFile,omitempty"`
	// CertificateFile is a PEM or PKCS#12 file with the certificate and its
	// private key (AZURE_CLIENT_CERTIFICATE_PATH).
	CertificateFile string `json:"certificateFile,omitempty"`
	// CertificatePassword decrypts CertificateFile
	// (AZURE_CLIENT_CERTIFICATE_PASSWORD).
	CertificatePassword Secret `json:"certificatePassword,omitempty"`
	// FederatedTokenFile is the projected service account token for
	// workload identity (AZURE_FEDERATED_TOKEN_FILE).
	FederatedTokenFile string `json:"federatedTokenFile,omitempty"`
	// ManagedIdentityResourceID selects a user-assigned managed identity by
	// ARM resource ID instead of ClientID.
	ManagedIdentityResourceID string `json:"managedIdentityResourceID,omitempty"`
	// AuthorityHost is the Entra ID authority, e.g.
	// https://login.microsoftonline.us/ or armsim's URL (AZURE_AUTHORITY_HOST;
	// default Azure public cloud). Instance discovery is disabled for hosts
	// that are not a known Azure cloud.
	AuthorityHost string `json:"authorityHost,omitempty"`
	// HTTPClient carries token requests (e.g. one trusting a test CA).
	HTTPClient *http.Client `json:"-"`
}

// Config locates Azure Resource Manager and says how to authenticate.
// Printing a Config (String, %v, %+v, %#v, JSON) never shows a secret.
type Config struct {
	// Auth says how to obtain tokens.
	Auth AuthConfig `json:"auth"`
	// ARMEndpoint is the Resource Manager URL; default
	// https://management.azure.com.
	ARMEndpoint string `json:"armEndpoint,omitempty"`
	// ARMAudience is the token audience for ARM; default the public cloud's
	// audience when ARMEndpoint is the default, else ARMEndpoint.
	ARMAudience string `json:"armAudience,omitempty"`
	// DefaultSubscription is searched for nodes without a providerID that
	// carry the kubernetes.azure.com/resource-group label.
	DefaultSubscription string `json:"defaultSubscription,omitempty"`
	// AllowInsecureHTTP lets bearer tokens travel over plain HTTP (tests
	// against a local simulator only).
	AllowInsecureHTTP bool `json:"allowInsecureHTTP,omitempty"`
	// HTTPClient carries ARM requests (and token requests when
	// Auth.HTTPClient is nil), e.g. one trusting a test CA.
	HTTPClient *http.Client `json:"-"`
}

// String renders the configuration with secrets redacted.
func (c Config) String() string {
	return fmt.Sprintf("azure.Config{ARMEndpoint: %q, ARMAudience: %q, DefaultSubscription: %q, AllowInsecureHTTP: %t, Auth: %s}",
		c.ARMEndpoint, c.ARMAudience, c.DefaultSubscription, c.AllowInsecureHTTP, c.Auth)
}

// GoString renders the configuration with secrets redacted under %#v.
func (c Config) GoString() string { return c.String() }

// String renders the authentication settings with secrets redacted.
func (a AuthConfig) String() string {
	return fmt.Sprintf("{Mode: %q, TenantID: %q, ClientID: %q, ClientSecret: %q, ClientSecretFile: %q, CertificateFile: %q, "+
		"CertificatePassword: %q, FederatedTokenFile: %q, ManagedIdentityResourceID: %q, AuthorityHost: %q}",
		a.Mode, a.TenantID, a.ClientID, a.ClientSecret.String(), a.ClientSecretFile, a.CertificateFile,
		a.CertificatePassword.String(), a.FederatedTokenFile, a.ManagedIdentityResourceID, a.AuthorityHost)
}

// GoString renders the authentication settings with secrets redacted.
func (a AuthConfig) GoString() string { return a.String() }

// CloudConfiguration is the azcore cloud configuration the provider uses:
// the public cloud with the configured authority host, ARM endpoint and
// audience.
func (c Config) CloudConfiguration() cloud.Configuration {
	pub := cloud.AzurePublic
	endpoint := strings.TrimSuffix(c.ARMEndpoint, "/")
	audience := c.ARMAudience
	arm := pub.Services[cloud.ResourceManager]
	switch {
	case endpoint == "":
		endpoint = arm.Endpoint
		if audience == "" {
			audience = arm.Audience
		}
	case audience == "":
		audience = endpoint
	}
	cfg := cloud.Configuration{
		ActiveDirectoryAuthorityHost: c.Auth.authorityHost(),
		Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Endpoint: endpoint, Audience: audience},
		},
	}
	return cfg
}

// Validate checks the endpoints and then Auth. The ARM endpoint, when set,
// must be an absolute https URL (http only with AllowInsecureHTTP, which a
// local simulator needs); the authority host (or $AZURE_AUTHORITY_HOST), when
// set, an absolute https URL, as Entra ID clients refuse any other.
func (c Config) Validate() error {
	arm := checkURL(c.ARMEndpoint, FlagARMEndpoint, "https://management.usgovcloudapi.net")
	if arm == nil && strings.HasPrefix(strings.ToLower(c.ARMEndpoint), "http:") && !c.AllowInsecureHTTP {
		arm = fmt.Errorf("%s %q is plain http, which would send tokens unencrypted: use https, or add %s for a local simulator",
			FlagARMEndpoint, c.ARMEndpoint, FlagAllowInsecureHTTP)
	}
	authority := orEnv(c.Auth.AuthorityHost, EnvAuthorityHost)
	setting := FlagAuthorityHost + " or $" + EnvAuthorityHost
	auth := checkURL(authority, setting, "https://login.microsoftonline.us")
	if auth == nil && authority != "" && !strings.HasPrefix(strings.ToLower(authority), "https:") {
		auth = fmt.Errorf("%s %q must use https: Entra ID clients refuse a plain http authority", setting, authority)
	}
	return errors.Join(arm, auth, c.Auth.Validate())
}

// checkURL returns an error naming setting when v is neither empty (the
// public cloud's default) nor an absolute http(s) URL with a host.
func checkURL(v, setting, example string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%s %q is not an absolute http(s) URL: give one such as %s, or leave it unset for the Azure public cloud", setting, v, example)
	}
	return nil
}

// authorityHost is the configured or environment authority host with a
// trailing slash, or the public cloud's.
func (a AuthConfig) authorityHost() string {
	h := a.AuthorityHost
	if h == "" {
		h = getenv(EnvAuthorityHost)
	}
	if h == "" {
		return cloud.AzurePublic.ActiveDirectoryAuthorityHost
	}
	return strings.TrimSuffix(h, "/") + "/"
}

// knownAuthorities are the Azure clouds' authority hosts, for which MSAL's
// instance discovery works.
var knownAuthorities = []string{
	cloud.AzurePublic.ActiveDirectoryAuthorityHost,
	cloud.AzureGovernment.ActiveDirectoryAuthorityHost,
	cloud.AzureChina.ActiveDirectoryAuthorityHost,
}

// customAuthority reports whether the authority host is not a known Azure
// cloud (a simulator, Azure Stack): instance discovery must then be off.
func (a AuthConfig) customAuthority() bool {
	h := strings.ToLower(a.authorityHost())
	for _, k := range knownAuthorities {
		if strings.EqualFold(h, k) {
			return false
		}
	}
	return true
}
