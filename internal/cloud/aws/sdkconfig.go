package aws

import (
	"context"
	"errors"
	"fmt"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/middleware"

	"github.com/tagsync/tagsync/internal/cloud"
)

// ProviderName is the provider label of the AWS request metrics
// (cloud.RequestMetrics) and Provider.Name.
const ProviderName = providerName

// LoadConfig loads the AWS SDK configuration that cfg and opts describe, as
// NewProvider does, for other AWS clients of tagsync (the SQS event
// source): cfg's fields first (region, endpoint, profile, static keys),
// then Options.HTTPClient, RetryMaxAttempts and LoadOptions, then the SDK's
// default chain (environment, shared files, IRSA, EKS Pod Identity,
// instance metadata). It validates cfg and sends no request. The region
// may still be empty when nothing names one; the caller decides whether
// that is an error.
func LoadConfig(ctx context.Context, cfg Config, opts ...Option) (sdkaws.Config, error) {
	var o Options
	for _, f := range opts {
		f(&o)
	}
	if err := cfg.Validate(); err != nil {
		return sdkaws.Config{}, fmt.Errorf("aws: %w", err)
	}
	return loadConfig(ctx, cfg, o)
}

// loadConfig is LoadConfig with the options applied.
func loadConfig(ctx context.Context, cfg Config, o Options) (sdkaws.Config, error) {
	var load []func(*config.LoadOptions) error
	if cfg.Region != "" {
		load = append(load, config.WithRegion(cfg.Region))
	}
	if cfg.Endpoint != "" {
		load = append(load, config.WithBaseEndpoint(cfg.Endpoint))
	}
	if cfg.Profile != "" {
		load = append(load, config.WithSharedConfigProfile(cfg.Profile))
	}
	if cfg.staticCredentials() {
		load = append(load, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(
			cfg.AccessKeyID.Reveal(), cfg.SecretAccessKey.Reveal(), cfg.SessionToken.Reveal())))
	}
	if o.HTTPClient != nil {
		load = append(load, config.WithHTTPClient(o.HTTPClient))
	}
	if o.RetryMaxAttempts > 0 {
		load = append(load, config.WithRetryMaxAttempts(o.RetryMaxAttempts))
	}
	load = append(load, o.LoadOptions...)
	awsCfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		var noProfile config.SharedConfigProfileNotExistError
		if errors.As(err, &noProfile) {
			return sdkaws.Config{}, fmt.Errorf("aws: the AWS profile %q (%s or %s) is in none of the shared config files: %w",
				noProfile.Profile, FlagProfile, EnvProfile, err)
		}
		return sdkaws.Config{}, fmt.Errorf("aws: loading the AWS configuration: %w", err)
	}
	return awsCfg, nil
}

// CountRequests returns a client API option (for a service client's
// Options.APIOptions) that counts and times every HTTP attempt of the
// client, SDK retries included, in m: operation is the IAM action
// ("sqs:ReceiveMessage"), as for the provider's own clients.
func CountRequests(m *cloud.RequestMetrics) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Deserialize.Add(metricsMiddleware{m: m}, middleware.Before)
	}
}
