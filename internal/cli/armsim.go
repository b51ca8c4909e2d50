package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tagsync/tagsync/internal/armsim"
)

// armsimFlags are the settings of `tagsync armsim`.
type armsimFlags struct {
	listen, caDir, seed, tenant, subscription, identityHeader string
	tls, noThrottle, verbose                                  bool
	pageSize, lroPolls                                        int
	errorRate                                                 float64
	latency                                                   time.Duration
	reads, writes, deletes                                    armsim.Bucket
}

// NewArmsimCommand returns `tagsync armsim`, which runs the Azure Resource
// Manager simulator until SIGINT or SIGTERM.
func NewArmsimCommand() *cobra.Command {
	f := &armsimFlags{}
	cmd := &cobra.Command{
		Use:   "armsim",
		Short: "Run the Azure Resource Manager simulator (ARM + token service) for tests and demos",
		Long: `armsim serves the parts of Azure Resource Manager tagsync uses (VMs, scale sets, the Tags
API, Resources - List, a Resource Graph subset) plus a token service that azidentity accepts,
with ARM's tag rules, throttling and error shapes. Point any Azure SDK for Go client at it with
the settings it prints. See docs/armsim.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runArmsim(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8443", "address to listen on")
	fl.BoolVar(&f.tls, "tls", true, "serve HTTPS with a generated CA (azidentity needs HTTPS); --tls=false serves plain HTTP")
	fl.StringVar(&f.caDir, "ca-dir", "", "directory for the CA certificate armsim-ca.pem (default: a temporary directory)")
	fl.StringVar(&f.seed, "seed", "", "YAML state file to load at start (see docs/armsim.md)")
	fl.StringVar(&f.tenant, "tenant", armsim.DefaultTenantID, "tenant ID of issued tokens")
	fl.StringVar(&f.subscription, "subscription", "00000000-0000-4000-8000-000000000001", "subscription to create when no --seed is given")
	fl.StringVar(&f.identityHeader, "identity-header", "armsim-identity-header", "value managed-identity clients send in X-IDENTITY-HEADER (not a real secret)")
	fl.IntVar(&f.pageSize, "page-size", armsim.DefaultPageSize, "items per page in ARM lists")
	fl.IntVar(&f.lroPolls, "lro-polls", 0, "status polls a long-running write needs (0 = finish at once)")
	fl.Float64Var(&f.reads.Capacity, "read-capacity", 250, "read bucket capacity per subscription")
	fl.Float64Var(&f.reads.RefillPerSecond, "read-refill", 25, "read tokens refilled per second")
	fl.Float64Var(&f.writes.Capacity, "write-capacity", 200, "write bucket capacity per subscription")
	fl.Float64Var(&f.writes.RefillPerSecond, "write-refill", 10, "write tokens refilled per second")
	fl.Float64Var(&f.deletes.Capacity, "delete-capacity", 200, "delete bucket capacity per subscription")
	fl.Float64Var(&f.deletes.RefillPerSecond, "delete-refill", 10, "delete tokens refilled per second")
	fl.BoolVar(&f.noThrottle, "no-throttle", false, "never answer 429")
	fl.Float64Var(&f.errorRate, "error-rate", 0, "probability (0..1) of a random 500/503")
	fl.DurationVar(&f.latency, "latency", 0, "latency added to every request")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log one line per request")
	return cmd
}

func (f *armsimFlags) options(out io.Writer) armsim.Options {
	o := armsim.Options{
		TLS: f.tls, CADir: f.caDir, TenantID: f.tenant, PageSize: f.pageSize, LROPolls: f.lroPolls,
		IdentityHeader: f.identityHeader,
		Throttle:       armsim.ThrottleOptions{Disabled: f.noThrottle, Reads: f.reads, Writes: f.writes, Deletes: f.deletes},
		Faults:         armsim.FaultOptions{ErrorRate: f.errorRate, Latency: f.latency},
	}
	if f.verbose {
		o.Logf = func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	}
	return o
}

func runArmsim(cmd *cobra.Command, f *armsimFlags) error {
	if f.errorRate < 0 || f.errorRate > 1 {
		return fmt.Errorf("--error-rate %v: must be between 0 and 1", f.errorRate)
	}
	out := cmd.OutOrStdout()
	s, err := armsim.New(f.options(cmd.ErrOrStderr()))
	if err != nil {
		return err
	}
	if err := seedArmsim(s, f); err != nil {
		return err
	}
	if err := s.Start(f.listen); err != nil {
		return err
	}
	defer s.Close()
	printArmsimInfo(out, s)
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	fmt.Fprintln(out, "armsim: stopping")
	return nil
}

func seedArmsim(s *armsim.Server, f *armsimFlags) error {
	if f.seed != "" {
		return s.LoadYAMLFile(f.seed)
	}
	return s.CreateSubscription(f.subscription, nil)
}

// printArmsimInfo tells the user how to point clients at the server.
func printArmsimInfo(w io.Writer, s *armsim.Server) {
	u := s.URL()
	fmt.Fprintf(w, "armsim listening on %s\n", u)
	fmt.Fprintf(w, "  ARM endpoint and audience: %s\n", u)
	fmt.Fprintf(w, "  authority host:            %s/\n", u)
	fmt.Fprintf(w, "  tenant:                    %s\n", s.TenantID())
	if s.TLS() {
		fmt.Fprintf(w, "  CA certificate:            %s\n", s.CAFile())
	}
	fmt.Fprintf(w, "  admin API:                 %s/_admin/ (state, calls, tags, faults, config, reset)\n", u)
	fmt.Fprintln(w, "Client settings (Go SDK): arm.ClientOptions{ClientOptions: policy.ClientOptions{Cloud: cloud.Configuration{")
	fmt.Fprintf(w, "  ActiveDirectoryAuthorityHost: %q, Services: {cloud.ResourceManager: {Endpoint: %q, Audience: %q}}}}}\n", u+"/", u, u)
	if s.TLS() {
		fmt.Fprintln(w, "  azidentity credentials: set DisableInstanceDiscovery: true; any client ID and secret are accepted")
		fmt.Fprintf(w, "  trust the CA:  export SSL_CERT_FILE=%s\n", s.CAFile())
	} else {
		fmt.Fprintln(w, "  plain HTTP: set policy.ClientOptions.InsecureAllowCredentialWithHTTP; azidentity needs --tls")
	}
	fmt.Fprintf(w, "  environment:   export AZURE_TENANT_ID=%s AZURE_CLIENT_ID=armsim AZURE_CLIENT_SECRET=armsim\n", s.TenantID())
	for _, k := range []string{"IDENTITY_ENDPOINT", "IDENTITY_HEADER"} {
		fmt.Fprintf(w, "  managed identity: export %s=%s\n", k, s.ManagedIdentityEnv()[k])
	}
}
