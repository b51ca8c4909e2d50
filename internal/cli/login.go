package cli

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/clouds"
)

// Exit codes of `tagsync login` besides 0 (identity obtained, every check
// passed), 1 and ExitUsage.
const (
	// ExitLoginMissing: the identity was obtained but a permission tagsync
	// needs is missing or could not be checked.
	ExitLoginMissing = 3
)

// loginFlags are the settings of `tagsync login`.
type loginFlags struct {
	// clouds are the clouds' settings, with what their checks need
	// (Azure's --subscription, AWS's --classifier and queue).
	clouds clouds.Set
}

// NewLoginCommand returns `tagsync login`, which runs tagsync run's
// credential chain, shows the identity and checks the permissions.
func NewLoginCommand() *cobra.Command {
	f := &loginFlags{}
	cmd := &cobra.Command{
		Use:   "login [azure|aws]",
		Short: "Show who tagsync run's credentials are and check the permissions tagsync needs",
		Long: `login obtains credentials exactly as tagsync run would, from the same flags and
environment variables, prints the identity they name and checks with cheap reads
whether it may do what tagsync does. It never prints a secret or a token.

Azure: the tenant, client and object ID from the ARM token's claims; per
subscription (--subscription, default --azure-subscription) the permissions ARM
reports (Microsoft.Authorization/permissions) against the actions tagsync
needs, and a one-row Resource Graph query.
AWS (when --aws-region or AWS_REGION is set): the account and ARN from
sts:GetCallerIdentity; tag:GetResources with a page of one, and ec2:CreateTags
/ ec2:DeleteTags as dry runs (nothing is written) on the first EC2 resource
found (with --classifier, one carrying that tag); for the node sync,
ec2:DescribeInstances (a dry run) and autoscaling:DescribeAutoScalingGroups;
with --events-sqs-queue-url, sqs:GetQueueAttributes on that queue. Actions
that cannot be checked without doing them (Auto Scaling's tag writes, taking
messages from the queue) are listed as unknown.

Without an argument both clouds are checked (AWS only when configured).

Exit codes:
  0  identity obtained and every permission present
  1  no identity: the credential chain failed
  2  wrong flags or arguments
  3  identity obtained, but a permission is missing or could not be checked`,
		Example: `  tagsync login azure --azure-auth-mode=workload-identity --subscription 0000...
  tagsync login aws --aws-region eu-west-1 --classifier kubernetes.io/cluster/prod-7lpkm=owned`,
		Args:      usageArgs(cobra.MatchAll(cobra.MaximumNArgs(1), cobra.OnlyValidArgs)),
		ValidArgs: clouds.Names(),
		RunE:      func(cmd *cobra.Command, args []string) error { return runLogin(cmd, f, args) },
	}
	fl := cmd.Flags()
	f.clouds = clouds.Bind(fl, cloud.UseLogin)
	return cmd
}

// runLogin logs in to the chosen clouds (without an argument, those that
// start) and sets the exit code.
func runLogin(cmd *cobra.Command, f *loginFlags, args []string) error {
	chosen := f.clouds.Enabled()
	if len(args) == 1 {
		chosen = clouds.Set{f.clouds.Get(args[0])}
	}
	var results []cloud.LoginResult
	for _, c := range chosen {
		if err := c.Complete(); err != nil {
			return usageError(err)
		}
		r, err := loginCloud(cmd, c)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	return loginExit(results)
}

// loginCloud checks one cloud with a progress display on standard error
// (token requests and permission reads can take seconds); its report goes
// to standard output once the checks are done, so the two never interleave.
func loginCloud(cmd *cobra.Command, c cloud.Settings) (cloud.LoginResult, error) {
	var report bytes.Buffer
	prog := startProgress(cmd.ErrOrStderr(), "checking the "+c.Kind().Name+" credentials")
	r, err := c.Login(cmd.Context(), &report)
	prog.stop()
	if err != nil {
		return r, usageError(err)
	}
	_, err = cmd.OutOrStdout().Write(report.Bytes())
	return r, err
}

// loginExit turns the results into the exit code.
func loginExit(results []cloud.LoginResult) error {
	for _, r := range results {
		if !r.Identified {
			return &ExitError{Code: 1, Err: fmt.Errorf("no identity: the credential chain failed (see above)")}
		}
	}
	for _, r := range results {
		if r.Missing {
			return &ExitError{Code: ExitLoginMissing, Err: fmt.Errorf("a permission tagsync needs is missing (see above)")}
		}
	}
	return nil
}
