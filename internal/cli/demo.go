package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tagsync/tagsync/internal/playground"
)

// runPlayground runs the demo; tests replace it.
var runPlayground = playground.Run

// NewDemoCommand returns `tagsync demo`, the local playground: a real
// kube-apiserver and etcd, the ARM simulator seeded like an AKS cluster, the
// controller, and a scripted scenario printed as a timeline.
func NewDemoCommand() *cobra.Command {
	var o playground.Options
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the local playground: real kube-apiserver, simulated Azure, the controller, a scripted scenario",
		Long: `demo starts a real kube-apiserver and etcd (from bin/k8s; run 'make tools' or
'make demo' once to build them), the ARM simulator seeded like an AKS cluster
(two Uniform scale sets, a Flexible scale set, an availability-set VM, a VM in
another resource group, an on-prem node), the matching Nodes and a default
NodeTagSync, then runs the controller through a scripted scenario: portal
edits, node labels, a conflict, a node-pool reconcile wiping tags, a tag name
with a space, tags on every resource the cluster owns, and a BareMetalHost's
label kept on its Node (Cluster API's CRDs come from the Go module cache, so
the go command must be on PATH; the API server is its own workload cluster).
It prints a timeline and tables of labels, tags and ARM calls.

It exits 0 when every step held, otherwise 1 with the step that failed and
why. It stops everything and removes its temporary files when it ends, also
on Ctrl-C. With --keep everything keeps running after the scenario, with a
kubeconfig and the armsim endpoint printed, until Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Out = cmd.OutOrStdout()
			o.LogOut = cmd.ErrOrStderr()
			ctx, stop := demoContext(cmd.Context())
			defer stop()
			return runPlayground(ctx, o)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.Keep, "keep", false, "keep everything running after the scenario (kubeconfig and armsim endpoint are printed) until Ctrl-C")
	fs.DurationVar(&o.StepTimeout, "timeout", playground.DefaultStepTimeout, "how long each step may take to converge")
	fs.BoolVarP(&o.Verbose, "verbose", "v", false, "print the controller's and armsim's logs (default: a file in the temporary directory)")
	fs.StringVar(&o.AssetsDir, "assets", "", "directory with kube-apiserver and etcd (default $KUBEBUILDER_ASSETS, else bin/k8s)")
	fs.StringVar(&o.RepoDir, "repo", "", "the tagsync repository, for its CRDs (default: found above the working directory)")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if o.StepTimeout < time.Second {
			return fmt.Errorf("--timeout %s is too short: give each step at least 1s (default %s)", o.StepTimeout, playground.DefaultStepTimeout)
		}
		return nil
	}
	return cmd
}

// demoContext extends ctx (which ends on SIGINT and SIGTERM) so that the
// demo also cleans up when its terminal goes away (SIGHUP), and keeps a
// closed stdout (tagsync demo | head) from killing the process by SIGPIPE
// before it has stopped kube-apiserver and etcd: writes then just fail.
func demoContext(ctx context.Context) (context.Context, func()) {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	return ctx, func() {
		signal.Stop(pipe)
		stop()
	}
}
