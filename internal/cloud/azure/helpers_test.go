package azure

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/cloudtest"
)

// testProvider is a Provider pointed at a running armsim.
type testProvider struct {
	*Provider
	env *armsimEnv
	reg *prometheus.Registry
}

// armsimEnv is the armsim one test runs: the server, its default
// subscription and the SDK settings, with seeding and reading helpers that
// fail the test on error. Call its helpers from the test that started it,
// not from its subtests.
type armsimEnv struct {
	*armsimtest.Env
	t *testing.T
}

// startArmsim starts armsim for t (see armsimtest.Start).
func startArmsim(t *testing.T, opts ...armsimtest.Option) *armsimEnv {
	t.Helper()
	return &armsimEnv{Env: armsimtest.Start(t, opts...), t: t}
}

// vm creates a VM in the default subscription and returns its ID.
func (e *armsimEnv) vm(rg string, vm armsim.VirtualMachine) string {
	e.t.Helper()
	return must[string](e.t)(e.Server.CreateVM(e.SubscriptionID, rg, vm))
}

// scaleSet creates a scale set in the default subscription and returns its ID.
func (e *armsimEnv) scaleSet(rg string, ss armsim.ScaleSet) string {
	e.t.Helper()
	return must[string](e.t)(e.Server.CreateScaleSet(e.SubscriptionID, rg, ss))
}

// resource creates a resource in the default subscription and returns its ID.
func (e *armsimEnv) resource(rg string, r armsim.Resource) string {
	e.t.Helper()
	return must[string](e.t)(e.Server.CreateResource(e.SubscriptionID, rg, r))
}

// tags returns the tags armsim holds for id.
func (e *armsimEnv) tags(id string) map[string]string {
	e.t.Helper()
	return must[map[string]string](e.t)(e.Server.Tags(id))
}

// provider builds a Provider against e (see newTestProvider).
func (e *armsimEnv) provider(opts ...Option) *testProvider {
	e.t.Helper()
	return newTestProvider(e.t, e, nil, opts...)
}

// armsimConfig points a Config at armsim: ARM endpoint and audience and the
// authority host are the server's URL, the HTTP client trusts its CA, and
// the credential is a client secret (any secret works there).
func armsimConfig(env *armsimEnv) Config {
	return Config{
		ARMEndpoint:         env.Server.URL(),
		ARMAudience:         env.Server.URL(),
		DefaultSubscription: env.SubscriptionID,
		HTTPClient:          env.HTTPClient,
		Auth: AuthConfig{
			Mode:          AuthClientSecret,
			TenantID:      env.Server.TenantID(),
			ClientID:      armsimtest.ClientID,
			ClientSecret:  armsimtest.ClientSecret,
			AuthorityHost: env.Server.URL(),
		},
	}
}

// newTestProvider builds a Provider against env with fast retries and polls
// and a fresh metrics registry; opts override.
func newTestProvider(t *testing.T, env *armsimEnv, cfg *Config, opts ...Option) *testProvider {
	t.Helper()
	c := armsimConfig(env)
	if cfg != nil {
		c = *cfg
	}
	// Idle connections the transport dialled but never used would hold the
	// server's graceful shutdown for 5s: close them first (cleanups run LIFO).
	t.Cleanup(env.HTTPClient.CloseIdleConnections)
	reg := prometheus.NewRegistry()
	all := append([]Option{
		WithRegisterer(reg),
		WithRetry(Retry{MaxRetries: 3, RetryDelay: 5 * time.Millisecond, MaxRetryDelay: 2 * time.Second}),
		WithPollFrequency(5 * time.Millisecond),
	}, opts...)
	p, err := NewProvider(t.Context(), c, all...)
	if err != nil {
		t.Fatalf("NewProvider: %v", err)
	}
	return &testProvider{Provider: p, env: env, reg: reg}
}

// must fails the test on err.
func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// armCalls counts armsim's calls of the given operations.
func armCalls(s *armsim.Server, ops ...string) map[string]int {
	c := s.Calls()
	out := map[string]int{}
	for _, op := range ops {
		if n := c.Count(op); n > 0 {
			out[op] = n
		}
	}
	return out
}

// readOps are the ARM read operations tests count.
var readOps = []string{
	"VirtualMachines.List", "VirtualMachines.Get", "VirtualMachineScaleSets.List", "VirtualMachineScaleSets.Get",
	"VirtualMachineScaleSetVMs.List", "VirtualMachineScaleSetVMs.Get", "VirtualMachines.ListAll",
	"VirtualMachineScaleSets.ListAll", "Tags.GetAtScope",
}

// writeOps are the ARM write operations tests count.
var writeOps = []string{
	"Tags.UpdateAtScope", "Tags.CreateOrUpdateAtScope", "Tags.DeleteAtScope",
	"VirtualMachines.Update", "VirtualMachineScaleSets.Update", "VirtualMachineScaleSetVMs.Update",
}

// seedOwned seeds a cluster estate (armsimtest.ClusterEstate) named infra
// with perType resources of each type in each of subs (the default
// subscription when none), tagged as the cluster's (clusterTag: owned).
func (e *armsimEnv) seedOwned(infra string, perType int, subs ...string) armsimtest.ClusterEstate {
	e.t.Helper()
	est := armsimtest.ClusterEstate{Infra: infra, PerType: perType, Subscriptions: subs, Tags: map[string]string{clusterTag: "owned"}}
	if err := est.Seed(e.Server); err != nil {
		e.t.Fatal(err)
	}
	return est
}

// counterValue sums a metric's samples whose labels include want.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	return cloudtest.MetricSum(t, reg, name, want)
}

// vmProviderID is a VM's providerID.
func vmProviderID(sub, rg, name string) string {
	return "azure://" + VirtualMachineResourceID(sub, rg, name)
}

// instanceProviderID is a Uniform instance's providerID.
func instanceProviderID(sub, rg, vmss, id string) string {
	return "azure://" + ScaleSetResourceID(sub, rg, vmss) + "/virtualMachines/" + id
}

// containsAll reports whether s contains every part.
func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// node builds a cloud.Node.
func node(name, providerID string, labels map[string]string) cloud.Node {
	return cloud.Node{Name: name, ProviderID: providerID, Labels: labels}
}
