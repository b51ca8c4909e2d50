// Package armsimtest starts an armsim server for a test and hands out what
// an Azure SDK for Go client needs to talk to it: a credential and
// *arm.ClientOptions. With them any armcompute / armresources /
// armresourcegraph client is three lines away:
//
//	env := armsimtest.Start(t)
//	vms, err := armcompute.NewVirtualMachinesClient(env.SubscriptionID, env.Credential, env.ClientOptions)
package armsimtest

import (
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/tagsync/tagsync/internal/armsim"
)

// Defaults of the environment Start creates.
const (
	// SubscriptionID is the subscription Start creates.
	SubscriptionID = "00000000-0000-4000-8000-000000000001"
	// ClientID is the service principal the credential uses.
	ClientID = "11111111-0000-4000-8000-000000000001"
	// ClientSecret is its secret.
	ClientSecret = "armsim-test-secret"
)

// Env is a running armsim plus ready-to-use SDK settings.
type Env struct {
	// Server is the simulator; seed and inspect it through its methods.
	Server *armsim.Server
	// SubscriptionID exists (empty) when Start returns.
	SubscriptionID string
	// Credential gets tokens from the server: azidentity's
	// ClientSecretCredential over HTTPS, a plain client-credentials
	// credential over HTTP (azidentity refuses http authorities).
	Credential azcore.TokenCredential
	// ClientOptions point ARM clients at the server, trust its CA, allow
	// bearer tokens over plain HTTP when TLS is off, and retry fast.
	ClientOptions *arm.ClientOptions
	// HTTPClient trusts the server's CA.
	HTTPClient *http.Client
}

// Option adjusts the armsim.Options Start uses.
type Option func(*armsim.Options)

// WithPlainHTTP serves plain HTTP instead of HTTPS.
func WithPlainHTTP() Option { return func(o *armsim.Options) { o.TLS = false } }

// WithPageSize sets the list page size.
func WithPageSize(n int) Option { return func(o *armsim.Options) { o.PageSize = n } }

// WithLROPolls makes long-running writes need n polls.
func WithLROPolls(n int) Option { return func(o *armsim.Options) { o.LROPolls = n } }

// WithClock installs a clock (e.g. armsim.NewFakeClock).
func WithClock(c armsim.Clock) Option { return func(o *armsim.Options) { o.Clock = c } }

// WithThrottle sets the throttling buckets.
func WithThrottle(t armsim.ThrottleOptions) Option { return func(o *armsim.Options) { o.Throttle = t } }

// WithOptions applies any change to the options.
func WithOptions(f func(*armsim.Options)) Option { return Option(f) }

// Start runs armsim on a free loopback port (HTTPS unless WithPlainHTTP,
// CA in t.TempDir()), creates SubscriptionID and stops the server when the
// test ends.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	o := armsim.Options{TLS: true, CADir: t.TempDir(), LRORetryAfter: time.Millisecond}
	for _, f := range opts {
		f(&o)
	}
	s, err := armsim.New(o)
	if err != nil {
		t.Fatalf("armsim.New: %v", err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatalf("armsim.Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.CreateSubscription(SubscriptionID, nil); err != nil {
		t.Fatalf("armsim: %v", err)
	}
	env, err := NewEnv(s, SubscriptionID)
	if err != nil {
		t.Fatalf("armsimtest: %v", err)
	}
	return env
}

// NewEnv builds the SDK settings for an already running server (for
// callers outside tests, e.g. a demo).
func NewEnv(s *armsim.Server, subscriptionID string) (*Env, error) {
	env := &Env{Server: s, SubscriptionID: subscriptionID, HTTPClient: s.HTTPClient()}
	env.ClientOptions = &arm.ClientOptions{
		ClientOptions: policy.ClientOptions{
			Cloud:     Cloud(s),
			Transport: env.HTTPClient,
			Retry:     policy.RetryOptions{MaxRetries: 3, RetryDelay: 5 * time.Millisecond, MaxRetryDelay: 2 * time.Second},
			// Bearer tokens over plain HTTP are fine against a local simulator.
			InsecureAllowCredentialWithHTTP: !s.TLS(),
		},
		DisableRPRegistration: true,
	}
	if !s.TLS() {
		env.Credential = s.Credential(ClientID, ClientSecret)
		return env, nil
	}
	cred, err := azidentity.NewClientSecretCredential(s.TenantID(), ClientID, ClientSecret,
		&azidentity.ClientSecretCredentialOptions{ClientOptions: env.IdentityClientOptions(), DisableInstanceDiscovery: true})
	if err != nil {
		return nil, err
	}
	env.Credential = cred
	return env, nil
}

// Cloud is the cloud.Configuration that points at s: authority host and
// ARM endpoint and audience are all the server's URL.
func Cloud(s *armsim.Server) cloud.Configuration {
	return cloud.Configuration{
		ActiveDirectoryAuthorityHost: s.URL() + "/",
		Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Endpoint: s.URL(), Audience: s.URL()},
		},
	}
}

// IdentityClientOptions are the azcore.ClientOptions for azidentity
// credentials (pair them with DisableInstanceDiscovery: true).
func (e *Env) IdentityClientOptions() azcore.ClientOptions {
	return policy.ClientOptions{Cloud: Cloud(e.Server), Transport: e.HTTPClient}
}

// HookedClient is the Env's HTTP client with hook called on each request
// before it is sent: for tests that watch or steer the provider's calls.
func (e *Env) HookedClient(hook func(*http.Request)) *http.Client {
	return &http.Client{Transport: hookTransport{next: e.HTTPClient.Transport, hook: hook}}
}

// hookTransport calls hook before sending each request.
type hookTransport struct {
	next http.RoundTripper
	hook func(*http.Request)
}

func (t hookTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.hook(req)
	return t.next.RoundTrip(req)
}
