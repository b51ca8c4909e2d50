package aws

import (
	"context"
	"fmt"
	"slices"
	"sync"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	tagging "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	"github.com/aws/smithy-go/middleware"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// Provider is the AWS implementation of cloud.ClassifiedProvider (it finds
// EC2 resources by classifier tags and writes their tags) and of
// cloud.NodeProvider (it syncs nodes with their EC2 instances or Auto
// Scaling groups). It is safe for concurrent use.
type Provider struct {
	cfg     Config
	opts    Options
	awsCfg  sdkaws.Config
	region  string
	metrics *cloud.RequestMetrics
	budget  *budget // nil: none

	mu      sync.Mutex
	clients map[string]*clients // by region
	nodes   nodeCache           // the node sync's reads
}

var _ cloud.ClassifiedProvider = (*Provider)(nil)

// clients are the SDK clients of one region.
type clients struct {
	ec2         *ec2.Client
	tagging     *tagging.Client
	autoscaling *autoscaling.Client
	elb         *elbv2.Client
}

// NewProvider builds a Provider: it loads the AWS configuration with
// config.LoadDefaultConfig (cfg's fields first, then Options.LoadOptions),
// so that without static keys the SDK's default credential chain applies:
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, the shared config and
// credentials files (Profile or AWS_PROFILE), web identity (IRSA:
// AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE), container credentials
// (EKS Pod Identity: AWS_CONTAINER_CREDENTIALS_FULL_URI), then EC2 instance
// metadata. Credentials are fetched on the first request, not here:
// NewProvider sends no request. It fails when no region is configured
// anywhere, naming the flag and variable to set.
func NewProvider(ctx context.Context, cfg Config, opts ...Option) (*Provider, error) {
	var o Options
	for _, f := range opts {
		f(&o)
	}
	o = o.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("aws: %w", err)
	}
	awsCfg, err := loadConfig(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("aws: no AWS region: set %s or %s (or a region in the AWS profile)", FlagRegion, EnvRegion)
	}
	m, err := cloud.NewRequestMetrics(providerName, o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("aws: register metrics: %w", err)
	}
	return &Provider{cfg: cfg, opts: o, awsCfg: awsCfg, region: awsCfg.Region, metrics: m, budget: newBudget(o.RateLimit),
		clients: map[string]*clients{}, nodes: nodeCache{now: o.Clock}}, nil
}

// String describes the provider without credentials.
func (p *Provider) String() string {
	return fmt.Sprintf("aws.Provider{Region: %q, Endpoint: %q}", p.region, p.cfg.Endpoint)
}

// GoString describes the provider without credentials under %#v.
func (p *Provider) GoString() string { return p.String() }

// Region returns the provider's default region (Config.Region or the one
// the AWS configuration named).
func (p *Provider) Region() string { return p.region }

// apiOptions returns the middleware that every client of a service and
// region runs: per-call state, the throttle gate, the budget (every
// attempt, after the gate let it through) and request metrics.
func (p *Provider) apiOptions(service, region string) []func(*middleware.Stack) error {
	gate := gateMiddleware{gates: p.opts.Gates, m: p.metrics, endpoint: p.cfg.Endpoint, service: service, region: region}
	return []func(*middleware.Stack) error{
		func(s *middleware.Stack) error { return s.Initialize.Add(callStateMiddleware{}, middleware.Before) },
		func(s *middleware.Stack) error { return s.Finalize.Insert(gate, "Retry", middleware.After) },
		func(s *middleware.Stack) error {
			return s.Finalize.Insert(budgetMiddleware{b: p.budget, region: region}, gate.ID(), middleware.After)
		},
		CountRequests(p.metrics),
	}
}

// clientsFor returns (creating once) the SDK clients of a region.
func (p *Provider) clientsFor(region string) *clients {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[region]; ok {
		return c
	}
	c := &clients{
		ec2: ec2.NewFromConfig(p.awsCfg, func(o *ec2.Options) {
			o.Region = region
			o.APIOptions = append(slices.Clip(o.APIOptions), p.apiOptions(ec2.ServiceID, region)...)
		}),
		tagging: tagging.NewFromConfig(p.awsCfg, func(o *tagging.Options) {
			o.Region = region
			o.APIOptions = append(slices.Clip(o.APIOptions), p.apiOptions(tagging.ServiceID, region)...)
		}),
		autoscaling: autoscaling.NewFromConfig(p.awsCfg, func(o *autoscaling.Options) {
			o.Region = region
			o.APIOptions = append(slices.Clip(o.APIOptions), p.apiOptions(autoscaling.ServiceID, region)...)
		}),
		elb: elbv2.NewFromConfig(p.awsCfg, func(o *elbv2.Options) {
			o.Region = region
			o.APIOptions = append(slices.Clip(o.APIOptions), p.apiOptions(elbv2.ServiceID, region)...)
		}),
	}
	p.clients[region] = c
	return c
}

// Name returns "aws".
func (p *Provider) Name() string { return providerName }

// Rules returns AWS's tag rules.
func (p *Provider) Rules() tags.Rules { return TagRules }

// PlatformKeys returns the keys the platforms on AWS own (PlatformKeys).
func (p *Provider) PlatformKeys() []tags.PlatformKey { return PlatformKeys }

// Calls returns how many HTTP requests the provider sent, by operation
// named as its IAM action ("ec2:CreateTags", "ec2:DeleteTags",
// "tag:GetResources", "ec2:DescribeInstances",
// "autoscaling:DescribeAutoScalingGroups", ...), SDK retries included.
func (p *Provider) Calls() map[string]int { return p.metrics.Calls() }
