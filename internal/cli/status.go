package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// statusFlags are the settings of `tagsync status`.
type statusFlags struct {
	kube          *kubeFlags
	output        string
	watch         bool
	allNamespaces bool
	// now is the clock for ages (tests fix it).
	now func() time.Time
}

// NewStatusCommand returns `tagsync status`, which shows every tagsync
// object of the cluster with its conditions, counts, conflicts and
// failures.
func NewStatusCommand() *cobra.Command {
	f := &statusFlags{now: time.Now}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every tagsync object with its conditions, counts, conflicts and failures",
		Long: `status shows the tagsync objects of the cluster: the NodeTagSyncs (cluster-wide),
and the CloudMetadata, AzureMetadata, AWSMetadata and LabelSyncProfile objects of
the namespace (-n, else the kubeconfig context's; -A for all). Kinds whose CRD
is not installed are left out. Below the tables it lists every condition that
is not healthy, the current node/cloud conflicts and the resources the
requests failed on.

-o json|yaml prints the objects themselves as a List. --watch prints the
status again whenever an object changes (a full screen on a terminal).

Exit codes:
  0  shown (also when some objects report problems)
  1  the cluster could not be read
  2  wrong flags or arguments`,
		Example: `  tagsync status -n platform
  tagsync status -A -o yaml
  kubectl tagsync status --watch`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runStatus(cmd, f) },
	}
	f.kube = addKubeFlags(cmd)
	fl := cmd.Flags()
	fl.BoolVarP(&f.watch, "watch", "w", false, "after showing the status, show it again whenever a tagsync object changes")
	fl.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "show the objects of every namespace")
	addOutputFlag(cmd, &f.output, "json and yaml: the objects themselves, as a List")
	return cmd
}

// runStatus reads the objects once, or keeps watching them with --watch.
func runStatus(cmd *cobra.Command, f *statusFlags) error {
	ns := ""
	if !f.allNamespaces {
		var err error
		if ns, err = f.kube.namespace(); err != nil {
			return err
		}
	}
	if f.watch {
		return watchStatus(cmd.Context(), cmd, f, ns)
	}
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	p := startProgress(cmd.ErrOrStderr(), "reading the tagsync objects")
	r, err := collectStatus(cmd.Context(), c, ns, statusKinds)
	p.stop()
	if err != nil {
		return err
	}
	return writeStatus(cmd.OutOrStdout(), cmd.ErrOrStderr(), f, r)
}

// writeStatus prints a report in the chosen format, and says on stderr
// what it could not show.
func writeStatus(out, errOut io.Writer, f *statusFlags, r *statusReport) error {
	if len(r.Forbidden) > 0 {
		fmt.Fprintf(errOut, "tagsync: not allowed to list %s: left out\n", strings.Join(r.Forbidden, ", "))
	}
	if f.output != outputTable {
		return printObjects(out, f.output, r.objects())
	}
	if r.empty() {
		where := "in namespace " + r.Namespace
		if r.Namespace == "" {
			where = "in any namespace"
		}
		_, err := fmt.Fprintf(errOut, "No tagsync objects found %s.\n", where)
		return err
	}
	return printTables(out, r.tables(f.now()), useColour(out))
}

// printTables prints the non-empty tables separated by blank lines.
func printTables(w io.Writer, tables []*table, colour bool) error {
	first := true
	for _, t := range tables {
		if len(t.rows) == 0 {
			continue
		}
		if !first {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		first = false
		if err := t.print(w, colour); err != nil {
			return err
		}
	}
	return nil
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError(fmt.Errorf("unexpected argument %q; %s takes flags only", args[0], cmd.Name()))
	}
	return nil
}

// usageArgs makes the errors of args usage errors.
func usageArgs(args cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := args(cmd, a); err != nil {
			return usageError(err)
		}
		return nil
	}
}

// usageError marks err as wrong flags or arguments (exit code 2).
func usageError(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// ExitUsage is the exit code of wrong flags or arguments (the same as
// validate's ExitUnreadable).
const ExitUsage = 2

// isCanceled reports whether err only says the context ended (Ctrl-C).
func isCanceled(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err()))
}
