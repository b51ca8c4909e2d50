package cloud

import (
	"context"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/tagsync/tagsync/internal/tags"
)

// Kind is one cloud as the rest of tagsync knows it: its name, tag rules
// and platform keys, its flags, how its provider is built and how its
// credentials are checked. Each cloud's package defines one (azure.Kind,
// aws.Kind) and the registry, internal/cloud/clouds, lists them: `tagsync
// run`, `plan` and `login`, the operator, the playground and the
// benchmarks build providers through it, and nothing else names a cloud
// to do so. Which jobs a cloud's provider supports is the interfaces it
// implements (NodeProvider, ClassifiedProvider).
type Kind struct {
	// Name is the cloud's name, as a spec's provider field and the
	// provider's Name say it ("azure").
	Name string
	// Title names the cloud in prose ("Azure").
	Title string
	// Rules are the cloud's tag rules for most resources.
	Rules tags.Rules
	// PlatformKeys are the keys the platforms running Kubernetes on the
	// cloud own on node resources.
	PlatformKeys []tags.PlatformKey
	// CreatorKeys are the keys the creators of workloads' resources (CSI
	// drivers, the cloud provider) own there: a WorkloadTagPolicy may not
	// write them.
	CreatorKeys []tags.PlatformKey
	// OwnsID reports whether id names one of the cloud's resources (an
	// ARM resource ID, an ARN), and IDExample shows one for messages.
	OwnsID    func(id string) bool
	IDExample string
	// Bind binds the cloud's flags for use ("run", "plan" or "login"; each
	// binds the endpoint and credential flags, run its tuning flags too,
	// login the flags of its checks) and returns the settings they fill
	// in once fs is parsed.
	Bind func(fs *pflag.FlagSet, use Use) Settings
}

// Use is what a command binds a cloud's flags for.
type Use string

// The commands that bind cloud flags.
const (
	UseRun   Use = "run"
	UsePlan  Use = "plan"
	UseLogin Use = "login"
)

// Settings are one cloud's configuration, from its flags or built in code
// (the playground, tests, benchmarks).
type Settings interface {
	// Kind is the cloud the settings are of.
	Kind() *Kind
	// Complete reads what the flags name (secret and CA files) and checks
	// the settings; call it once, after the flags are parsed and before
	// the other methods.
	Complete() error
	// Enabled reports whether the cloud starts in this process (its
	// settings, or the environment, name it).
	Enabled() bool
	// NewProvider builds the cloud's provider. It sends no request.
	NewProvider(ctx context.Context, o ProviderOptions) (Provider, error)
	// Login checks, as `tagsync login` does, that the credential chain
	// gives an identity and that it holds the permissions tagsync needs,
	// writing a report for people to w.
	Login(ctx context.Context, w io.Writer) (LoginResult, error)
	// String describes the settings for logs, without secrets.
	String() string
}

// ProviderOptions are what the process gives every provider it builds.
type ProviderOptions struct {
	// Registerer receives the provider's metrics (nil: not registered).
	Registerer prometheus.Registerer
	// OwnWrites records the provider's writes, so that their events are
	// recognised as echoes (nil: none).
	OwnWrites *OwnWrites
	// Fresh turns off cached reads (`tagsync plan` reads afresh).
	Fresh bool
	// OwnGates gives the provider throttle gates of its own instead of
	// the process's (a command that must not wait for another's
	// throttling, a test).
	OwnGates bool
}

// LoginResult is what a Login found.
type LoginResult struct {
	// Identified: the credential chain gave an identity.
	Identified bool
	// Missing: a permission tagsync needs is missing or could not be
	// checked.
	Missing bool
}

// NotNegative returns an error when a rate flag is negative (0 means the
// provider's default).
func NotNegative(flag string, v float64) error {
	if v < 0 {
		return fmt.Errorf("%s %v is negative: give a positive number, or 0 for the provider's default", flag, v)
	}
	return nil
}

// PrintCheck prints one permission check of a Login and reports whether
// it failed.
func PrintCheck(w io.Writer, name string, ok bool, detail string) bool {
	mark := "ok     "
	if !ok {
		mark = "MISSING"
	}
	fmt.Fprintf(w, "    %s %s: %s\n", mark, name, detail)
	return !ok
}
