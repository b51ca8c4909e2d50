package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/clouds"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
)

// ExitPlanChanges is the exit code of `tagsync plan --exit-code` when the
// controllers would write something.
const ExitPlanChanges = 3

// planFlags are the settings of `tagsync plan`.
type planFlags struct {
	kube          *kubeFlags
	clouds        clouds.Set
	output        string
	allNamespaces bool
	exitCode      bool
	// providers builds the clouds (tests wrap it to see the providers'
	// call counters); nil means planProviders.
	providers func(ctx context.Context, f *planFlags) (cloud.Providers, error)
}

// NewPlanCommand returns `tagsync plan`, which shows the writes the
// controllers would make next, without making any.
func NewPlanCommand() *cobra.Command {
	cmd, _ := newPlanCommand()
	return cmd
}

// newPlanCommand returns `tagsync plan` and the flags it binds.
func newPlanCommand() (*cobra.Command, *planFlags) {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "plan [NAME]",
		Short: "Show the tags and labels the controllers would write next, as a diff, without writing",
		Long: `plan reads the cluster and the clouds and shows what the next pass of each
controller would write: tags per cloud resource and labels per Node for every
NodeTagSync, and tags per classified resource for every CloudMetadata of the
namespace (-n, else the kubeconfig context's; -A for all) with its
AzureMetadata / AWSMetadata, labels per Node for every LabelSyncProfile
of the namespace (its Nodes read in their workload clusters through the
Clusters' kubeconfig Secrets), and tags per disk for every
WorkloadTagPolicy. NAME limits it to the NodeTagSync, the CloudMetadata,
the LabelSyncProfile and the WorkloadTagPolicy of that name. It computes the writes
with the controllers' own planning code and only reads: no tag, label,
status or event is written.

"+" is a tag or label added, "~" one changed, "-" one removed. The cloud flags are those of tagsync run (the same
credential chain); AWS is read when --aws-region or AWS_REGION is set.

Exit codes:
  0  planned (with --exit-code: and nothing would be written)
  1  the cluster or a cloud could not be read
  2  wrong flags or arguments
  3  with --exit-code: something would be written`,
		Example: `  tagsync plan
  tagsync plan default -o json
  kubectl tagsync plan prod-cluster -n platform --azure-auth-mode=workload-identity`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError(fmt.Errorf("plan takes at most one NAME, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runPlan(cmd, f, args) },
	}
	f.kube = addKubeFlags(cmd)
	fl := cmd.Flags()
	f.clouds = clouds.Bind(fl, cloud.UsePlan)
	fl.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "plan the CloudMetadata and LabelSyncProfiles of every namespace")
	fl.BoolVar(&f.exitCode, "exit-code", false, "exit with 3 when something would be written")
	addOutputFlag(cmd, &f.output, "json and yaml: the plan as data", "text")
	return cmd, f
}

// runPlan reads, plans and prints.
func runPlan(cmd *cobra.Command, f *planFlags, args []string) error {
	ctx := cmd.Context()
	sel, err := f.selection(args)
	if err != nil {
		return err
	}
	c, ls, err := f.planClients()
	if err != nil {
		return err
	}
	build := f.providers
	if build == nil {
		build = planProviders
	}
	providers, err := build(ctx, f)
	if err != nil {
		return usageError(err)
	}
	prog := startProgress(cmd.ErrOrStderr(), "reading the cluster and the clouds")
	if err := checkPlanCredentials(ctx, c, providers); err != nil {
		prog.stop()
		return err
	}
	report, err := collectPlan(ctx, c, providers, ls, sel)
	prog.stop()
	if err != nil {
		return err
	}
	if err := printPlan(cmd, f, report); err != nil {
		return err
	}
	if f.exitCode && report.Writes() > 0 {
		return &ExitError{Code: ExitPlanChanges, Err: fmt.Errorf("%d write(s) pending", report.Writes())}
	}
	return nil
}

// planClients returns the management cluster's client (it knows Cluster
// API and the BareMetalHost) and what planning LabelSyncProfiles needs:
// which of their CRDs are missing, and the workload clusters' clients.
func (f *planFlags) planClients() (client.Client, labelSyncAccess, error) {
	cfg, err := f.kube.restConfig()
	if err != nil {
		return nil, labelSyncAccess{}, err
	}
	c, err := client.New(cfg, client.Options{Scheme: planScheme()})
	if err != nil {
		return nil, labelSyncAccess{}, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, labelSyncAccess{}, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	return c, labelSyncAccess{missing: labelsync.MissingKinds(dc), clientFor: workloadClients(c)}, nil
}

// selection turns the flags and arguments into what to plan.
func (f *planFlags) selection(args []string) (planSelection, error) {
	sel := planSelection{allNamespaces: f.allNamespaces}
	if len(args) == 1 {
		sel.name = args[0]
	}
	if f.allNamespaces {
		return sel, nil
	}
	ns, err := f.kube.namespace()
	if err != nil {
		return sel, usageError(err)
	}
	sel.namespace = ns
	return sel, nil
}

// printPlan prints the report as a diff, or as JSON or YAML.
func printPlan(cmd *cobra.Command, f *planFlags, r *planReport) error {
	out := cmd.OutOrStdout()
	if f.output != outputTable {
		return printData(out, f.output, r)
	}
	return r.print(out, useColour(out))
}

// planProviders builds the clouds as tagsync run does, from the same flags
// (the registry's: Azure always, as it sends nothing until asked, AWS when
// a region is set). The providers read afresh, have their own throttle
// gates and register no metrics.
func planProviders(ctx context.Context, f *planFlags) (cloud.Providers, error) {
	if err := f.clouds.Complete(); err != nil {
		return nil, err
	}
	ps, err := f.clouds.Providers(ctx, cloud.ProviderOptions{Fresh: true, OwnGates: true})
	if err != nil {
		return nil, err
	}
	return cloud.NewProviders(ps...), nil
}

// errPlanNotFound is returned when NAME names nothing.
var errPlanNotFound = errors.New("not found")
