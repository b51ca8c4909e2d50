package clouds_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/clouds"
	"github.com/tagsync/tagsync/internal/cloud/cloudtest"
	"github.com/tagsync/tagsync/internal/tags"
)

// TestEveryCloudBuildsItsProvider: every registered cloud binds its flags
// for every command without clashing with another's, and, given a region
// where it needs one, builds a provider (sending no request) whose name,
// rules and platform keys are its entry's.
func TestEveryCloudBuildsItsProvider(t *testing.T) {
	for _, use := range []cloud.Use{cloud.UseRun, cloud.UsePlan, cloud.UseLogin} {
		fs := pflag.NewFlagSet(string(use), pflag.ContinueOnError)
		set := clouds.Bind(fs, use)
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
		if err := fs.Parse([]string{"--aws-region=eu-west-1", "--aws-endpoint=http://127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
		if err := set.Complete(); err != nil {
			t.Fatalf("%s: %v", use, err)
		}
		ps, err := set.Providers(context.Background(), cloud.ProviderOptions{Registerer: prometheus.NewRegistry(), OwnGates: true})
		if err != nil {
			t.Fatalf("%s: %v", use, err)
		}
		if len(ps) != len(clouds.All()) {
			t.Fatalf("%s: %d providers, want one per cloud (%v)", use, len(ps), clouds.Names())
		}
		for i, k := range clouds.All() {
			p := ps[i]
			if p.Name() != k.Name || p.Rules().NameCase() != k.Rules.NameCase() || !slices.Equal(tags.PlatformPatterns(p.PlatformKeys()), tags.PlatformPatterns(k.PlatformKeys)) {
				t.Errorf("%s: the %s provider is %s with %d platform keys, not its entry's", use, k.Name, p.Name(), len(p.PlatformKeys()))
			}
			if set[i].Kind() != k {
				t.Errorf("%s: settings %d are of %s, want %s", use, i, set[i].Kind().Name, k.Name)
			}
		}
	}
	if _, err := clouds.Lookup("gcp"); err == nil {
		t.Error("Lookup of an unknown cloud found one")
	}
}

// third is a cloud tagsync does not ship: a Kind and its settings are all
// it takes for the flags, the providers and the jobs to include it.
var third = cloud.Kind{
	Name:         "third",
	Title:        "Third",
	Rules:        tags.Rules{MaxTags: 10, CaseInsensitive: true},
	PlatformKeys: []tags.PlatformKey{{Pattern: "third:*", Owner: "Third's managed Kubernetes", Why: "its node pools", Source: "a test"}},
	Bind: func(fs *pflag.FlagSet, _ cloud.Use) cloud.Settings {
		s := &thirdSettings{}
		fs.StringVar(&s.endpoint, "third-endpoint", "", "Third's API")
		return s
	},
}

type thirdSettings struct{ endpoint string }

func (s *thirdSettings) Kind() *cloud.Kind { return &third }
func (s *thirdSettings) Complete() error   { return nil }
func (s *thirdSettings) Enabled() bool     { return s.endpoint != "" }
func (s *thirdSettings) String() string    { return "endpoint " + s.endpoint }
func (s *thirdSettings) Login(context.Context, io.Writer) (cloud.LoginResult, error) {
	return cloud.LoginResult{Identified: true}, nil
}
func (s *thirdSettings) NewProvider(context.Context, cloud.ProviderOptions) (cloud.Provider, error) {
	p := cloudtest.New(third.Rules)
	p.SetPlatformKeys(third.PlatformKeys)
	return thirdProvider{p}, nil
}

// thirdProvider is the fake provider under Third's name.
type thirdProvider struct{ *cloudtest.Provider }

func (thirdProvider) Name() string { return third.Name }

// TestAThirdCloudIsOneEntry: a third cloud bound beside the registered
// ones gets its flags, starts when they say so, and its provider serves
// the node sync under its name with its rules and platform keys.
func TestAThirdCloudIsOneEntry(t *testing.T) {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	set := clouds.Bind(fs, cloud.UseRun, append(clouds.All(), &third)...)
	if err := fs.Parse([]string{"--third-endpoint=https://third.example"}); err != nil {
		t.Fatal(err)
	}
	if err := set.Complete(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_REGION", "")
	ps, err := set.Providers(context.Background(), cloud.ProviderOptions{Registerer: prometheus.NewRegistry(), OwnGates: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cloud.NewProviders(ps...).NodeProvider("third")
	if err != nil {
		t.Fatalf("NodeProvider(third): %v", err)
	}
	if !tags.IsPlatformKey(p.PlatformKeys(), p.Rules().NameCase(), "THIRD:pool") || p.Rules().MaxTags != 10 {
		t.Errorf("the third provider has rules %+v and platform keys %v, not its entry's", p.Rules(), p.PlatformKeys())
	}
	if got := set.Get("third"); got == nil || got.String() != "endpoint https://third.example" {
		t.Errorf("the third cloud's settings: %v", got)
	}
}

// TestOf: a resource ID names its cloud (the heartbeat's resources), and
// one no cloud owns is refused with examples of each cloud's.
func TestOf(t *testing.T) {
	for id, want := range map[string]string{
		"arn:aws:ec2:eu-west-1:123456789012:instance/i-1":                                        "aws",
		"/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-1": "azure",
		"/Subscriptions/0000/resourceGroups/rg":                                                  "azure",
	} {
		if k, err := clouds.Of(id); err != nil || k.Name != want {
			t.Errorf("Of(%q) = %v, %v; want %s", id, k, err, want)
		}
	}
	if _, err := clouds.Of("projects/p/zones/z/instances/i"); err == nil || !strings.Contains(err.Error(), "arn:") {
		t.Errorf("Of of another cloud's ID: %v, want an error with examples", err)
	}
}

// TestPlatformKeysDocumented: every cloud's platform keys are valid
// patterns and say who owns them, why, and where that is documented.
func TestPlatformKeysDocumented(t *testing.T) {
	for _, k := range clouds.All() {
		if len(k.PlatformKeys) < 2 {
			t.Errorf("%s: platform keys %v", k.Name, k.PlatformKeys)
		}
		for _, p := range k.PlatformKeys {
			if err := (tags.Filter{Platform: []string{p.Pattern}}).Validate(); err != nil {
				t.Errorf("%s %q: %v", k.Name, p.Pattern, err)
			}
			if p.Owner == "" || p.Why == "" || p.Source == "" {
				t.Errorf("%s %q: owner, why and source must all be given: %+v", k.Name, p.Pattern, p)
			}
		}
	}
}
