package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/azure"
)

// cloudFlags are the flags that say where the clouds are and which
// credentials reach them. `tagsync run`, `login` and `plan` bind the same
// ones, so login checks exactly the credential chain the controller uses.
type cloudFlags struct {
	azure    azure.Config
	auth     azure.AuthConfig
	authMode string
	caFile   string
	aws      aws.Config
	// awsSecretFile and awsTokenFile hold static AWS credentials.
	awsSecretFile, awsTokenFile string
}

// bindAzure binds the Azure endpoint and credential flags.
func (f *cloudFlags) bindAzure(fs *pflag.FlagSet) {
	fs.StringVar(&f.authMode, flagName(azure.FlagAuthMode), "auto", "auto | workload-identity | managed-identity | client-secret | client-certificate | default")
	fs.StringVar(&f.auth.TenantID, flagName(azure.FlagTenantID), "", "Entra ID tenant (default $AZURE_TENANT_ID)")
	fs.StringVar(&f.auth.ClientID, flagName(azure.FlagClientID), "", "application or user-assigned identity client ID (default $AZURE_CLIENT_ID)")
	fs.StringVar(&f.auth.ClientSecretFile, flagName(azure.FlagClientSecretFile), "", "file holding the client secret (default $AZURE_CLIENT_SECRET)")
	fs.StringVar(&f.auth.CertificateFile, flagName(azure.FlagCertificateFile), "", "PEM or PKCS#12 client certificate with key (default $AZURE_CLIENT_CERTIFICATE_PATH)")
	fs.StringVar(&f.auth.FederatedTokenFile, flagName(azure.FlagFederatedTokenFile), "", "workload identity token file (default $AZURE_FEDERATED_TOKEN_FILE)")
	fs.StringVar(&f.auth.AuthorityHost, flagName(azure.FlagAuthorityHost), "", "Entra ID authority, an https URL (sovereign clouds, or armsim; default $AZURE_AUTHORITY_HOST, else the public cloud's)")
	fs.StringVar(&f.azure.ARMEndpoint, flagName(azure.FlagARMEndpoint), "", "Azure Resource Manager endpoint, an https URL (http only with --azure-allow-insecure-http; default https://management.azure.com)")
	fs.StringVar(&f.azure.ARMAudience, flagName(azure.FlagARMAudience), "", "token audience for the ARM endpoint")
	fs.StringVar(&f.azure.DefaultSubscription, flagName(azure.FlagSubscription), "", "subscription searched for nodes without providerID (cross-resource-group nodes)")
	fs.StringVar(&f.caFile, "azure-ca-file", "", "extra CA bundle trusted for ARM and the authority (e.g. armsim's ca.crt)")
	fs.BoolVar(&f.azure.AllowInsecureHTTP, flagName(azure.FlagAllowInsecureHTTP), false, "send tokens over plain HTTP (local simulators only)")
}

// bindAWS binds the AWS endpoint and credential flags.
func (f *cloudFlags) bindAWS(fs *pflag.FlagSet) {
	fs.StringVar(&f.aws.Region, "aws-region", "", "AWS region of AWSMetadata objects without regions; the AWS provider starts only when this or $AWS_REGION is set")
	fs.StringVar(&f.aws.Endpoint, "aws-endpoint", "", "base URL of the EC2, Resource Groups Tagging API and Auto Scaling endpoints (e.g. a moto_server for trials); default AWS's")
	fs.StringVar(&f.aws.Profile, "aws-profile", "", "profile of the shared AWS config files (default $AWS_PROFILE); credentials otherwise come from the default chain: IRSA, EKS Pod Identity, environment, instance metadata")
	fs.StringVar((*string)(&f.aws.AccessKeyID), flagName(aws.FlagAccessKeyID), "", "static AWS access key ID (with --aws-secret-access-key-file); default: the AWS SDK's credential chain")
	fs.StringVar(&f.awsSecretFile, flagName(aws.FlagSecretAccessKeyFile), "", "file holding the secret access key of --aws-access-key-id (e.g. a mounted Secret)")
	fs.StringVar(&f.awsTokenFile, flagName(aws.FlagSessionTokenFile), "", "file holding the session token of temporary static credentials")
}

// azureConfig returns the Azure configuration the flags give: the
// authentication mode, the CA bundle's HTTP client, checked. It reads the
// CA file and fetches no token.
func (f *cloudFlags) azureConfig() (azure.Config, error) {
	cfg := f.azure
	cfg.Auth = f.auth
	cfg.Auth.Mode = azure.AuthMode(f.authMode)
	if f.caFile != "" {
		client, err := httpClientTrusting(f.caFile)
		if err != nil {
			return azure.Config{}, err
		}
		cfg.HTTPClient = client
		cfg.Auth.HTTPClient = client
	}
	if err := cfg.Validate(); err != nil {
		return azure.Config{}, err
	}
	return cfg, nil
}

// awsConfig returns the AWS configuration the flags give: the secret files
// are read here, so a missing file is an error at once.
func (f *cloudFlags) awsConfig() (aws.Config, error) {
	cfg := f.aws
	for _, s := range []struct {
		file, flag string
		dst        *aws.Secret
	}{{f.awsSecretFile, aws.FlagSecretAccessKeyFile, &cfg.SecretAccessKey}, {f.awsTokenFile, aws.FlagSessionTokenFile, &cfg.SessionToken}} {
		if s.file == "" {
			continue
		}
		b, err := os.ReadFile(s.file)
		if err != nil {
			return aws.Config{}, fmt.Errorf("%s: %w", s.flag, err)
		}
		*s.dst = aws.Secret(strings.TrimSpace(string(b)))
	}
	return cfg, cfg.Validate()
}

// azureProvider builds the Azure provider from the flags as tagsync run
// does, with throttle gates of its own and opts, and returns it with its
// configuration.
func (f *cloudFlags) azureProvider(ctx context.Context, opts ...azure.Option) (*azure.Provider, azure.Config, error) {
	cfg, err := f.azureConfig()
	if err != nil {
		return nil, cfg, err
	}
	p, err := azure.NewProvider(ctx, cfg, append([]azure.Option{azure.WithThrottleGates(azure.NewThrottleGates())}, opts...)...)
	return p, cfg, err
}

// awsProvider builds the AWS provider from the flags as tagsync run does,
// with throttle gates of its own.
func (f *cloudFlags) awsProvider(ctx context.Context) (*aws.Provider, error) {
	cfg, err := f.awsConfig()
	if err != nil {
		return nil, err
	}
	return aws.NewProvider(ctx, cfg, aws.WithThrottleGates(aws.NewThrottleGates()))
}

// awsEnabled reports whether the AWS provider starts: a region is given by
// flag or $AWS_REGION (as `tagsync run` decides).
func (f *cloudFlags) awsEnabled() bool {
	return f.aws.Region != "" || os.Getenv(aws.EnvRegion) != ""
}
