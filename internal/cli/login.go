package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
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
	cloud cloudFlags
	// subscriptions are checked on Azure (default --azure-subscription).
	subscriptions []string
	// classifier picks the AWS resource the dry runs name.
	classifier string
	// queueURL is the AWS event source's SQS queue to check ("": none).
	queueURL string
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
		ValidArgs: []string{"azure", "aws"},
		RunE:      func(cmd *cobra.Command, args []string) error { return runLogin(cmd, f, args) },
	}
	fl := cmd.Flags()
	f.cloud.bindAzure(fl)
	f.cloud.bindAWS(fl)
	fl.StringSliceVar(&f.subscriptions, "subscription", nil, "Azure subscriptions to check (default --azure-subscription)")
	fl.StringVar(&f.classifier, "classifier", "", "AWS: name=value of a classifier tag; the dry runs name a resource carrying it")
	fl.StringVar(&f.queueURL, "events-sqs-queue-url", "", "AWS: the SQS queue of tagsync run's --events-sqs-queue-url, to check the event source's rights on")
	return cmd
}

// loginResult is what one cloud's login found.
type loginResult struct {
	identified bool
	missing    bool
}

// runLogin logs in to the chosen clouds and sets the exit code.
func runLogin(cmd *cobra.Command, f *loginFlags, args []string) error {
	clouds := []string{"azure"}
	if f.cloud.awsEnabled() {
		clouds = append(clouds, "aws")
	}
	if len(args) == 1 {
		clouds = args
	}
	var results []loginResult
	for _, c := range clouds {
		r, err := f.loginCloud(cmd, c)
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
func (f *loginFlags) loginCloud(cmd *cobra.Command, cloud string) (loginResult, error) {
	var report bytes.Buffer
	prog := startProgress(cmd.ErrOrStderr(), "checking the "+cloud+" credentials")
	var r loginResult
	var err error
	if cloud == "azure" {
		r, err = f.loginAzure(cmd.Context(), &report)
	} else {
		r, err = f.loginAWS(cmd.Context(), &report)
	}
	prog.stop()
	if _, werr := cmd.OutOrStdout().Write(report.Bytes()); werr != nil && err == nil {
		err = werr
	}
	return r, err
}

// loginExit turns the results into the exit code.
func loginExit(results []loginResult) error {
	for _, r := range results {
		if !r.identified {
			return &ExitError{Code: 1, Err: fmt.Errorf("no identity: the credential chain failed (see above)")}
		}
	}
	for _, r := range results {
		if r.missing {
			return &ExitError{Code: ExitLoginMissing, Err: fmt.Errorf("a permission tagsync needs is missing (see above)")}
		}
	}
	return nil
}

// loginAzure builds the provider as tagsync run does and checks it.
func (f *loginFlags) loginAzure(ctx context.Context, w io.Writer) (loginResult, error) {
	p, cfg, err := f.cloud.azureProvider(ctx)
	if err != nil {
		return loginResult{}, usageError(err)
	}
	fmt.Fprintf(w, "Azure (credential: %s)\n", authModeOf(f.cloud.authMode))
	id, err := p.WhoAmI(ctx)
	if err != nil {
		fmt.Fprintf(w, "  no identity: %v\n", err)
		return loginResult{}, nil
	}
	fmt.Fprintf(w, "  tenant:    %s\n  client ID: %s\n  object ID: %s\n", id.TenantID, orDash(id.ClientID), orDash(id.ObjectID))
	if id.Type != "" {
		fmt.Fprintf(w, "  type:      %s\n", id.Type)
	}
	subs := f.subscriptions
	if len(subs) == 0 && cfg.DefaultSubscription != "" {
		subs = []string{cfg.DefaultSubscription}
	}
	if len(subs) == 0 {
		fmt.Fprintln(w, "  permissions not checked: name a subscription with --subscription or --azure-subscription")
		return loginResult{identified: true, missing: true}, nil
	}
	r := loginResult{identified: true}
	for _, sub := range subs {
		fmt.Fprintf(w, "  subscription %s:\n", sub)
		for _, c := range p.CheckAccess(ctx, sub) {
			r.missing = printCheck(w, c.Name, c.OK, c.Detail) || r.missing
		}
	}
	return r, nil
}

// loginAWS builds the provider as tagsync run does and checks it.
func (f *loginFlags) loginAWS(ctx context.Context, w io.Writer) (loginResult, error) {
	p, err := f.cloud.awsProvider(ctx)
	if err != nil {
		return loginResult{}, usageError(err)
	}
	fmt.Fprintf(w, "AWS (region %s)\n", p.Region())
	id, err := p.WhoAmI(ctx)
	if err != nil {
		fmt.Fprintf(w, "  no identity: %v\n", err)
		return loginResult{}, nil
	}
	fmt.Fprintf(w, "  account: %s\n  ARN:     %s\n", id.Account, id.ARN)
	r := loginResult{identified: true}
	checks := p.CheckAccess(ctx, f.classifier)
	if f.queueURL != "" {
		checks = append(checks, p.CheckQueue(ctx, f.queueURL, "")...)
	}
	for _, c := range checks {
		if c.Unchecked {
			fmt.Fprintf(w, "    %s %s: %s\n", "unknown", c.Name, c.Detail)
			continue
		}
		r.missing = printCheck(w, c.Name, c.OK, c.Detail) || r.missing
	}
	return r, nil
}

// printCheck prints one check and reports whether it failed.
func printCheck(w io.Writer, name string, ok bool, detail string) bool {
	mark := "ok     "
	if !ok {
		mark = "MISSING"
	}
	fmt.Fprintf(w, "    %s %s: %s\n", mark, name, detail)
	return !ok
}

// authModeOf names the Azure credential mode for people.
func authModeOf(mode string) string {
	if m := strings.ToLower(mode); m != "" && m != "auto" {
		return m
	}
	return "default chain (environment, workload identity, managed identity, Azure CLI)"
}

// orDash shows an empty value as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
