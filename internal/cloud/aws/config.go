package aws

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/tagsync/tagsync/internal/cloud"
)

// The `tagsync run` flags that set the Config fields. Errors about the
// configuration name these (and the Env* variables), never Go fields, so
// that an operator reading one knows what to set.
const (
	FlagRegion              = "--aws-region"
	FlagEndpoint            = "--aws-endpoint"
	FlagProfile             = "--aws-profile"
	FlagAccessKeyID         = "--aws-access-key-id"
	FlagSecretAccessKeyFile = "--aws-secret-access-key-file"
	FlagSessionTokenFile    = "--aws-session-token-file"
)

// Environment variables of the AWS SDK's default chain that the provider's
// messages name. The SDK reads them itself; Config fields, when set, win.
const (
	EnvRegion                 = "AWS_REGION"
	EnvDefaultRegion          = "AWS_DEFAULT_REGION"
	EnvProfile                = "AWS_PROFILE"
	EnvAccessKeyID            = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey        = "AWS_SECRET_ACCESS_KEY"
	EnvSessionToken           = "AWS_SESSION_TOKEN"
	EnvRoleARN                = "AWS_ROLE_ARN"
	EnvWebIdentityTokenFile   = "AWS_WEB_IDENTITY_TOKEN_FILE"
	EnvContainerCredsFullURI  = "AWS_CONTAINER_CREDENTIALS_FULL_URI"
	EnvContainerAuthTokenFile = "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"
	EnvEC2MetadataDisabled    = "AWS_EC2_METADATA_DISABLED"
)

// Secret is a credential value that prints, formats and marshals as
// "[redacted]" (see cloud.Secret).
type Secret = cloud.Secret

// Config says where the provider talks to AWS and as whom. Every field is
// optional: empty fields fall back to the AWS SDK's defaults (AWS_REGION,
// AWS_PROFILE and the shared config files, and the default credential
// chain: environment keys, web identity (IRSA), EKS Pod Identity, ECS
// container credentials, shared credentials, EC2 instance metadata).
// Printing a Config (String, %v, %+v, %#v, JSON) never shows a credential.
type Config struct {
	// Region is the region the provider works in when a call names none
	// (Discover without scopes, EC2 resource IDs that are not ARNs, node
	// providerIDs without a zone);
	// default AWS_REGION, AWS_DEFAULT_REGION or the profile's region.
	Region string `json:"region,omitempty"`
	// Endpoint overrides the base URL of the EC2, Resource Groups Tagging
	// API and Auto Scaling endpoints of every region, e.g. a moto_server's
	// http://127.0.0.1:PORT in tests. Empty means AWS's regional endpoints.
	// It does not redirect STS, which web identity calls while loading the
	// configuration (AWS_ENDPOINT_URL_STS does).
	Endpoint string `json:"endpoint,omitempty"`
	// Profile selects a profile of the shared config and credentials files
	// (~/.aws/config, ~/.aws/credentials); default AWS_PROFILE or
	// "default".
	Profile string `json:"profile,omitempty"`
	// AccessKeyID and SecretAccessKey are static credentials. Give both or
	// neither; with neither the default credential chain is used.
	AccessKeyID Secret `json:"accessKeyID,omitempty"`
	// SecretAccessKey is the secret of AccessKeyID.
	SecretAccessKey Secret `json:"secretAccessKey,omitempty"`
	// SessionToken completes temporary static credentials (optional).
	SessionToken Secret `json:"sessionToken,omitempty"`
}

// String renders the configuration with credentials redacted.
func (c Config) String() string {
	return fmt.Sprintf("aws.Config{Region: %q, Endpoint: %q, Profile: %q, AccessKeyID: %q, SecretAccessKey: %q, SessionToken: %q}",
		c.Region, c.Endpoint, c.Profile, c.AccessKeyID.String(), c.SecretAccessKey.String(), c.SessionToken.String())
}

// GoString renders the configuration with credentials redacted under %#v.
func (c Config) GoString() string { return c.String() }

// staticCredentials reports whether the configuration names static keys.
func (c Config) staticCredentials() bool { return c.AccessKeyID != "" || c.SecretAccessKey != "" }

// Validate checks what can be checked without loading the AWS
// configuration: the endpoint, when set, is an absolute http(s) URL, and
// static credentials are complete. The region is checked by NewProvider,
// which may find it in the environment or a profile.
func (c Config) Validate() error {
	var errs []error
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			errs = append(errs, fmt.Errorf("%s %q is not an absolute http(s) URL: give one such as http://127.0.0.1:5000 (a moto_server), or leave it unset for AWS's regional endpoints",
				FlagEndpoint, c.Endpoint))
		}
	}
	switch {
	case c.AccessKeyID != "" && c.SecretAccessKey == "":
		errs = append(errs, fmt.Errorf("%s is set but no secret access key is: set %s as well, or neither to use the default credential chain (%s/%s, IRSA, EKS Pod Identity, instance profile)",
			FlagAccessKeyID, FlagSecretAccessKeyFile, EnvAccessKeyID, EnvSecretAccessKey))
	case c.AccessKeyID == "" && c.SecretAccessKey != "":
		errs = append(errs, fmt.Errorf("a secret access key (%s) is set but no access key ID is: set %s as well, or neither to use the default credential chain",
			FlagSecretAccessKeyFile, FlagAccessKeyID))
	case c.SessionToken != "" && !c.staticCredentials():
		errs = append(errs, fmt.Errorf("a session token (%s) is set without static keys: set %s and %s as well, or none of them",
			FlagSessionTokenFile, FlagAccessKeyID, FlagSecretAccessKeyFile))
	}
	return errors.Join(errs...)
}
