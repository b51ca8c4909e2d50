package azure

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v4"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/lru"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// Provider is the Azure Resource Manager implementation of
// cloud.NodeProvider and cloud.ClassifiedProvider. It is safe for concurrent
// use.
type Provider struct {
	cfg     Config
	opts    Options
	cred    azcore.TokenCredential
	armOpts *arm.ClientOptions
	metrics *cloud.RequestMetrics
	now     func() time.Time

	mu      sync.Mutex
	clients map[string]*clients // by lower-cased subscription

	cacheMu sync.Mutex
	cache   map[listKey]*listing
	flight  singleflight.Group
	// shared are the recent single-resource reads, by canonical ID, for
	// the other readers of a change (events.go); sharedMu makes taking one
	// or starting one a single step.
	shared   *lru.Cache
	sharedMu sync.Mutex
	// reads are the subscriptions' read rights, as last checked
	// (readable.go).
	reads readChecks
}

var (
	_ cloud.NodeProvider       = (*Provider)(nil)
	_ cloud.ClassifiedProvider = (*Provider)(nil)
)

// clients are the SDK clients of one subscription.
type clients struct {
	vms  *armcompute.VirtualMachinesClient
	vmss *armcompute.VirtualMachineScaleSetsClient
	tags *armresources.TagsClient
}

// NewProvider builds a Provider: the credential (Options.Credential, else
// NewCredential(cfg.Auth)), an ARM pipeline with the retry options, the
// throttle gates, the client-side budget and request metrics, and an empty
// read cache. It sends
// no request; ctx is reserved for future start-up checks.
func NewProvider(ctx context.Context, cfg Config, opts ...Option) (*Provider, error) {
	_ = ctx
	var o Options
	for _, f := range opts {
		f(&o)
	}
	o = o.withDefaults()
	if o.WriteMethod != WriteTagsAPI && o.WriteMethod != WriteResourcePatch {
		return nil, fmt.Errorf("azure: unknown write method %q: want %s or %s", o.WriteMethod, WriteTagsAPI, WriteResourcePatch)
	}
	if cfg.Auth.HTTPClient == nil {
		cfg.Auth.HTTPClient = cfg.HTTPClient
	}
	cred := o.Credential
	if cred == nil {
		var err error
		if cred, err = NewCredential(cfg.Auth); err != nil {
			return nil, fmt.Errorf("azure: credential: %w", err)
		}
	}
	m, err := cloud.NewRequestMetrics(providerName, o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("azure: register metrics: %w", err)
	}
	p := &Provider{
		cfg: cfg, opts: o, cred: cred, metrics: m, now: time.Now,
		clients: map[string]*clients{}, cache: map[listKey]*listing{}, shared: newSharedReads(),
	}
	p.armOpts = p.clientOptions()
	return p, nil
}

// clientOptions builds the ARM pipeline options.
func (p *Provider) clientOptions() *arm.ClientOptions {
	b := newBudget(p.opts.RateLimit)
	var pc *pace
	if b != nil {
		pc = newPace(p.opts.providerLimits)
	}
	perRetry := []policy.Policy{
		throttlePolicy{gates: p.opts.Gates, budget: b, pace: pc, m: p.metrics},
		metricsPolicy{p.metrics},
	}
	var perCall []policy.Policy
	if p.opts.OwnWrites != nil {
		perCall = append(perCall, ownWritesPolicy{p.opts.OwnWrites})
	}
	co := &arm.ClientOptions{
		ClientOptions: policy.ClientOptions{
			PerCallPolicies: perCall,
			Cloud:           p.cfg.CloudConfiguration(),
			Retry: policy.RetryOptions{
				MaxRetries:    p.opts.Retry.MaxRetries,
				RetryDelay:    p.opts.Retry.RetryDelay,
				MaxRetryDelay: p.opts.Retry.MaxRetryDelay,
			},
			PerRetryPolicies:                perRetry,
			InsecureAllowCredentialWithHTTP: p.cfg.AllowInsecureHTTP,
		},
	}
	if p.cfg.HTTPClient != nil {
		co.Transport = p.cfg.HTTPClient
	}
	return co
}

// clientsFor returns (creating once) the SDK clients of a subscription.
func (p *Provider) clientsFor(sub string) (*clients, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := strings.ToLower(sub)
	if c, ok := p.clients[key]; ok {
		return c, nil
	}
	f, err := armcompute.NewClientFactory(sub, p.cred, p.armOpts)
	if err != nil {
		return nil, fmt.Errorf("azure: compute clients for subscription %s: %w", sub, err)
	}
	t, err := armresources.NewTagsClient(sub, p.cred, p.armOpts)
	if err != nil {
		return nil, fmt.Errorf("azure: tags client for subscription %s: %w", sub, err)
	}
	c := &clients{vms: f.NewVirtualMachinesClient(), vmss: f.NewVirtualMachineScaleSetsClient(), tags: t}
	p.clients[key] = c
	return c, nil
}

// Name returns "azure".
func (p *Provider) Name() string { return providerName }

// Rules returns Azure Resource Manager's tag rules.
func (p *Provider) Rules() tags.Rules { return TagRules }

// PlatformKeys returns the keys AKS owns (PlatformKeys).
func (p *Provider) PlatformKeys() []tags.PlatformKey { return PlatformKeys }

// Calls returns how many HTTP requests the provider sent, by operation
// (e.g. "VirtualMachines.List", "Tags.UpdateAtScope", "LRO.Poll"), retries
// and polls included.
func (p *Provider) Calls() map[string]int { return p.metrics.Calls() }
