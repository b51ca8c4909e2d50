package azure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tagsync/tagsync/internal/cloud"
)

// Kind is Azure in the registry of clouds (internal/cloud/clouds).
var Kind = cloud.Kind{
	Name:         providerName,
	Title:        "Azure",
	Rules:        TagRules,
	PlatformKeys: PlatformKeys,
	CreatorKeys:  CreatorKeys,
	OwnsID:       func(id string) bool { return strings.HasPrefix(strings.ToLower(id), "/subscriptions/") },
	IDExample:    "/subscriptions/...",
	Bind:         func(fs *pflag.FlagSet, use cloud.Use) cloud.Settings { return Bind(fs, use) },
}

// Settings are Azure's settings: the provider's Config and Options, and
// what the flags say of them.
type Settings struct {
	// Config configures the provider.
	Config Config
	// Options tune it (the flags' and the caller's).
	Options []Option

	authMode, caFile string
	// Tuning flags (run).
	writeMethod       string
	cacheTTL          time.Duration
	readQPS, writeQPS float64
	// Subscriptions are the subscriptions login checks (login).
	subscriptions []string
	bound         bool
}

// Bind binds Azure's flags for use to fs and returns the settings they
// fill in.
func Bind(fs *pflag.FlagSet, use cloud.Use) *Settings {
	s := &Settings{bound: true}
	c, a := &s.Config, &s.Config.Auth
	fs.StringVar(&s.authMode, flag(FlagAuthMode), "auto", "auto | workload-identity | managed-identity | client-secret | client-certificate | default")
	fs.StringVar(&a.TenantID, flag(FlagTenantID), "", "Entra ID tenant (default $AZURE_TENANT_ID)")
	fs.StringVar(&a.ClientID, flag(FlagClientID), "", "application or user-assigned identity client ID (default $AZURE_CLIENT_ID)")
	fs.StringVar(&a.ClientSecretFile, flag(FlagClientSecretFile), "", "file holding the client secret (default $AZURE_CLIENT_SECRET)")
	fs.StringVar(&a.CertificateFile, flag(FlagCertificateFile), "", "PEM or PKCS#12 client certificate with key (default $AZURE_CLIENT_CERTIFICATE_PATH)")
	fs.StringVar(&a.FederatedTokenFile, flag(FlagFederatedTokenFile), "", "workload identity token file (default $AZURE_FEDERATED_TOKEN_FILE)")
	fs.StringVar(&a.AuthorityHost, flag(FlagAuthorityHost), "", "Entra ID authority, an https URL (sovereign clouds, or armsim; default $AZURE_AUTHORITY_HOST, else the public cloud's)")
	fs.StringVar(&c.ARMEndpoint, flag(FlagARMEndpoint), "", "Azure Resource Manager endpoint, an https URL (http only with --azure-allow-insecure-http; default https://management.azure.com)")
	fs.StringVar(&c.ARMAudience, flag(FlagARMAudience), "", "token audience for the ARM endpoint")
	fs.StringVar(&c.DefaultSubscription, flag(FlagSubscription), "", "subscription searched for nodes without providerID (cross-resource-group nodes)")
	fs.StringVar(&s.caFile, flag(FlagCAFile), "", "extra CA bundle trusted for ARM and the authority (e.g. armsim's ca.crt)")
	fs.BoolVar(&c.AllowInsecureHTTP, flag(FlagAllowInsecureHTTP), false, "send tokens over plain HTTP (local simulators only)")
	switch use {
	case cloud.UseRun:
		fs.StringVar(&s.writeMethod, "azure-write-method", string(WriteTagsAPI), "TagsAPI (writes need Microsoft.Resources/tags/write; reads need the VM and scale-set reads, docs/install-aks.md) or ResourcePatch (If-Match on the VM/VMSS)")
		fs.DurationVar(&s.cacheTTL, "azure-read-cache-ttl", DefaultCacheTTL, "how long a bulk read is reused by event-driven passes")
		fs.Float64Var(&s.readQPS, "azure-read-qps", 0, "client-side ARM read budget per second (0: provider default, under ARM's 25/s)")
		fs.Float64Var(&s.writeQPS, "azure-write-qps", 0, "client-side ARM write budget per second (0: provider default, under ARM's 10/s)")
	case cloud.UseLogin:
		fs.StringSliceVar(&s.subscriptions, "subscription", nil, "Azure subscriptions to check (default --azure-subscription)")
	}
	return s
}

// FlagCAFile is the flag of an extra CA bundle trusted for ARM and the
// authority (the event webhook's JWKS fetches trust it too).
const FlagCAFile = "--azure-ca-file"

// flag is a flag's name without its dashes.
func flag(name string) string { return strings.TrimPrefix(name, "--") }

// Kind returns Azure's Kind.
func (s *Settings) Kind() *cloud.Kind { return &Kind }

// Complete reads the CA file, turns the flags into provider options and
// checks the configuration. It fetches no token.
func (s *Settings) Complete() error {
	if !s.bound {
		return s.Config.Validate()
	}
	s.Config.Auth.Mode = AuthMode(s.authMode)
	var errs []error
	if s.caFile != "" {
		client, err := HTTPClientTrusting(s.caFile)
		if err != nil {
			errs = append(errs, err)
		} else {
			s.Config.HTTPClient, s.Config.Auth.HTTPClient = client, client
		}
	}
	errs = append(errs, cloud.NotNegative("--azure-read-qps", s.readQPS), cloud.NotNegative("--azure-write-qps", s.writeQPS))
	if s.writeMethod != "" {
		s.Options = append(s.Options, WithWriteMethod(WriteMethod(s.writeMethod)), WithCacheTTL(s.cacheTTL))
	}
	if s.readQPS > 0 || s.writeQPS > 0 {
		s.Options = append(s.Options, WithRateLimit(RateLimit{ReadsPerSecond: s.readQPS, WritesPerSecond: s.writeQPS}))
	}
	if err := s.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CAFile is the CA bundle the flags name ("" when none).
func (s *Settings) CAFile() string { return s.caFile }

// Enabled is always true: the Azure provider sends nothing until a spec
// names it.
func (s *Settings) Enabled() bool { return true }

// NewProvider builds the Azure provider.
func (s *Settings) NewProvider(ctx context.Context, o cloud.ProviderOptions) (cloud.Provider, error) {
	return s.provider(ctx, o)
}

// provider is NewProvider's *Provider.
func (s *Settings) provider(ctx context.Context, o cloud.ProviderOptions) (*Provider, error) {
	opts := []Option{WithRegisterer(o.Registerer), WithOwnWrites(o.OwnWrites)}
	if o.OwnGates {
		opts = append(opts, WithThrottleGates(NewThrottleGates()))
	}
	opts = append(opts, s.Options...)
	if o.Fresh {
		opts = append(opts, WithCacheTTL(-1))
	}
	p, err := NewProvider(ctx, s.Config, opts...)
	if err != nil {
		return nil, fmt.Errorf("setting up the Azure provider: %w", err)
	}
	return p, nil
}

// String describes the settings without secrets.
func (s *Settings) String() string { return s.Config.String() }

// Login checks the credential chain and, per subscription, the
// permissions tagsync needs.
func (s *Settings) Login(ctx context.Context, w io.Writer) (cloud.LoginResult, error) {
	p, err := s.provider(ctx, cloud.ProviderOptions{OwnGates: true})
	if err != nil {
		return cloud.LoginResult{}, err
	}
	fmt.Fprintf(w, "Azure (credential: %s)\n", authModeOf(s.authMode))
	id, err := p.WhoAmI(ctx)
	if err != nil {
		fmt.Fprintf(w, "  no identity: %v\n", err)
		return cloud.LoginResult{}, nil
	}
	fmt.Fprintf(w, "  tenant:    %s\n  client ID: %s\n  object ID: %s\n", id.TenantID, orDash(id.ClientID), orDash(id.ObjectID))
	if id.Type != "" {
		fmt.Fprintf(w, "  type:      %s\n", id.Type)
	}
	subs := s.subscriptions
	if len(subs) == 0 && s.Config.DefaultSubscription != "" {
		subs = []string{s.Config.DefaultSubscription}
	}
	if len(subs) == 0 {
		fmt.Fprintln(w, "  permissions not checked: name a subscription with --subscription or --azure-subscription")
		return cloud.LoginResult{Identified: true, Missing: true}, nil
	}
	r := cloud.LoginResult{Identified: true}
	for _, sub := range subs {
		fmt.Fprintf(w, "  subscription %s:\n", sub)
		for _, c := range p.CheckAccess(ctx, sub) {
			r.Missing = cloud.PrintCheck(w, c.Name, c.OK, c.Detail) || r.Missing
		}
	}
	return r, nil
}

// authModeOf names the credential mode for people.
func authModeOf(mode string) string {
	if m := strings.ToLower(mode); m != "" && m != "auto" {
		return m
	}
	return "default chain (environment, workload identity, managed identity, Azure CLI)"
}

// orDash shows an empty value as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// HTTPClientTrusting returns an HTTP client that trusts the system roots
// and the PEM certificates in file (FlagCAFile).
func HTTPClientTrusting(file string) (*http.Client, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", FlagCAFile, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s %s holds no PEM certificate", FlagCAFile, file)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr}, nil
}
