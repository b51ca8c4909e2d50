package aws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tagsync/tagsync/internal/cloud"
)

// Kind is AWS in the registry of clouds (internal/cloud/clouds).
var Kind = cloud.Kind{
	Name:         providerName,
	Title:        "AWS",
	Rules:        TagRules,
	PlatformKeys: PlatformKeys,
	CreatorKeys:  CreatorKeys,
	OwnsID:       func(id string) bool { return strings.HasPrefix(id, "arn:") },
	IDExample:    "arn:...",
	Bind:         func(fs *pflag.FlagSet, use cloud.Use) cloud.Settings { return Bind(fs, use) },
}

// Settings are AWS's settings: the provider's Config and Options, and what
// the flags say of them.
type Settings struct {
	// Config configures the provider.
	Config Config
	// Options tune it (the flags' and the caller's).
	Options []Option

	// secretFile and tokenFile hold static credentials.
	secretFile, tokenFile string
	// Tuning flags (run).
	readQPS, writeQPS float64
	// What login checks (login): a classifier's dry runs, a queue.
	classifier, queueURL string
	bound                bool
}

// Bind binds AWS's flags for use to fs and returns the settings they fill
// in.
func Bind(fs *pflag.FlagSet, use cloud.Use) *Settings {
	s := &Settings{bound: true}
	c := &s.Config
	fs.StringVar(&c.Region, flag(FlagRegion), "", "AWS region of AWSMetadata objects without regions; the AWS provider starts only when this or $AWS_REGION is set")
	fs.StringVar(&c.Endpoint, flag(FlagEndpoint), "", "base URL of the EC2, Resource Groups Tagging API and Auto Scaling endpoints (e.g. a moto_server for trials); default AWS's")
	fs.StringVar(&c.Profile, flag(FlagProfile), "", "profile of the shared AWS config files (default $AWS_PROFILE); credentials otherwise come from the default chain: IRSA, EKS Pod Identity, environment, instance metadata")
	fs.StringVar((*string)(&c.AccessKeyID), flag(FlagAccessKeyID), "", "static AWS access key ID (with --aws-secret-access-key-file); default: the AWS SDK's credential chain")
	fs.StringVar(&s.secretFile, flag(FlagSecretAccessKeyFile), "", "file holding the secret access key of --aws-access-key-id (e.g. a mounted Secret)")
	fs.StringVar(&s.tokenFile, flag(FlagSessionTokenFile), "", "file holding the session token of temporary static credentials")
	switch use {
	case cloud.UseRun:
		fs.Float64Var(&s.readQPS, "aws-read-qps", 0, fmt.Sprintf("client-side AWS read budget per second, per region (0: provider default, %v/s)", DefaultReadsPerSecond))
		fs.Float64Var(&s.writeQPS, "aws-write-qps", 0, fmt.Sprintf("client-side AWS write budget per second, per region (0: provider default, %v/s)", DefaultWritesPerSecond))
	case cloud.UseLogin:
		fs.StringVar(&s.classifier, "classifier", "", "AWS: name=value of a classifier tag; the dry runs name a resource carrying it")
		fs.StringVar(&s.queueURL, "events-sqs-queue-url", "", "AWS: the SQS queue of tagsync run's --events-sqs-queue-url, to check the event source's rights on")
	}
	return s
}

// flag is a flag's name without its dashes.
func flag(name string) string { return strings.TrimPrefix(name, "--") }

// Kind returns AWS's Kind.
func (s *Settings) Kind() *cloud.Kind { return &Kind }

// Complete reads the secret files (a missing file is an error at once),
// turns the tuning flags into provider options and checks the
// configuration.
func (s *Settings) Complete() error {
	var errs []error
	for _, f := range []struct {
		file, flag string
		dst        *Secret
	}{{s.secretFile, FlagSecretAccessKeyFile, &s.Config.SecretAccessKey}, {s.tokenFile, FlagSessionTokenFile, &s.Config.SessionToken}} {
		if f.file == "" {
			continue
		}
		b, err := os.ReadFile(f.file)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.flag, err))
			continue
		}
		*f.dst = Secret(strings.TrimSpace(string(b)))
	}
	errs = append(errs, cloud.NotNegative("--aws-read-qps", s.readQPS), cloud.NotNegative("--aws-write-qps", s.writeQPS))
	if s.readQPS > 0 || s.writeQPS > 0 {
		s.Options = append(s.Options, WithRateLimit(RateLimit{ReadsPerSecond: s.readQPS, WritesPerSecond: s.writeQPS}))
	}
	if err := s.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Enabled reports whether the AWS provider starts: a region is given, by
// the settings or $AWS_REGION. A process without AWS settings runs without
// AWS.
func (s *Settings) Enabled() bool { return s.Config.Region != "" || os.Getenv(EnvRegion) != "" }

// NewProvider builds the AWS provider.
func (s *Settings) NewProvider(ctx context.Context, o cloud.ProviderOptions) (cloud.Provider, error) {
	return s.provider(ctx, o)
}

// provider is NewProvider's *Provider.
func (s *Settings) provider(ctx context.Context, o cloud.ProviderOptions) (*Provider, error) {
	opts := []Option{WithRegisterer(o.Registerer)}
	if o.OwnGates {
		opts = append(opts, WithThrottleGates(NewThrottleGates()))
	}
	opts = append(opts, s.Options...)
	if o.Fresh {
		opts = append(opts, WithCacheTTL(-1))
	}
	p, err := NewProvider(ctx, s.Config, opts...)
	if err != nil {
		return nil, fmt.Errorf("setting up the AWS provider: %w", err)
	}
	return p, nil
}

// String describes the settings without secrets.
func (s *Settings) String() string { return s.Config.String() }

// Login checks the credential chain, and the permissions tagsync needs
// (with a classifier, dry runs on a resource carrying it; with a queue,
// the event source's).
func (s *Settings) Login(ctx context.Context, w io.Writer) (cloud.LoginResult, error) {
	p, err := s.provider(ctx, cloud.ProviderOptions{OwnGates: true})
	if err != nil {
		return cloud.LoginResult{}, err
	}
	fmt.Fprintf(w, "AWS (region %s)\n", p.Region())
	id, err := p.WhoAmI(ctx)
	if err != nil {
		fmt.Fprintf(w, "  no identity: %v\n", err)
		return cloud.LoginResult{}, nil
	}
	fmt.Fprintf(w, "  account: %s\n  ARN:     %s\n", id.Account, id.ARN)
	r := cloud.LoginResult{Identified: true}
	checks := p.CheckAccess(ctx, s.classifier)
	if s.queueURL != "" {
		checks = append(checks, p.CheckQueue(ctx, s.queueURL, "")...)
	}
	for _, c := range checks {
		if c.Unchecked {
			fmt.Fprintf(w, "    %s %s: %s\n", "unknown", c.Name, c.Detail)
			continue
		}
		r.Missing = cloud.PrintCheck(w, c.Name, c.OK, c.Detail) || r.Missing
	}
	return r, nil
}
