// Package cli holds the cobra commands of the tagsync binary. Each command
// lives in its own file; cmd/tagsync only wires them together.
package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tagsync/tagsync/internal/version"
)

// NewRootCommand returns the tagsync root command with no subcommands; the
// caller adds the ones that exist. Its --version flag prints what
// `tagsync version` prints.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "tagsync",
		Short: "Keep cloud resource tags and Kubernetes labels in agreement",
		Long: `tagsync keeps cloud resource tags and Kubernetes labels in agreement,
declaratively and cheaply on cloud API quota:
  - node tags: Azure VM and scale-set tags, AWS EC2 instance and Auto Scaling
    group tags, with node labels, both ways (NodeTagSync)
  - metadata: declared tags on every Azure and AWS resource that carries a
    classifier tag (CloudMetadata, AzureMetadata, AWSMetadata)
  - OpenShift: the Infrastructure's user tags on the cluster's resources
  - label sync: labels of Metal3 BareMetalHosts on the Nodes of workload
    clusters (LabelSyncProfile)
'tagsync run' is the controller manager; the other verbs check credentials,
show status, plan, edit tag requests, clean up and run the Helm chart's
steps ('tagsync chart').`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get(),
	}
	root.SetVersionTemplate(version.Read().String() + "\n")
	// Wrong flags are usage errors (exit code 2) in every verb.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	return root
}

// NewCommandTree returns the tagsync command with every verb, as the binary
// invoked as argv0 runs it (docs are checked against its flags).
func NewCommandTree(argv0 string) *cobra.Command {
	root := NewRootCommand()
	AdjustForInvocation(root, argv0)
	root.AddCommand(
		NewVersionCommand(),
		NewRunCommand(),
		NewDemoCommand(),
		NewArmsimCommand(),
		NewValidateCommand(),
		NewStatusCommand(),
		NewPlanCommand(),
		NewLoginCommand(),
		NewTagsCommand(),
		NewCleanupCommand(),
		NewChartCommand(),
	)
	RejectUnknownCommands(root)
	return root
}

// RejectUnknownCommands makes root, once its verbs are added, refuse an
// unknown verb as a usage error (exit code 2) instead of printing help with
// exit code 0: every command that only groups verbs (tagsync, tags,
// completion) prints its help when given none and refuses any other
// argument, and `help` refuses an unknown topic.
func RejectUnknownCommands(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = cobra.ArbitraryArgs
			c.RunE = runGroup
		}
		if c.Name() == "help" {
			c.RunE = runHelp
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// runGroup runs a command that only groups verbs: its help, or an
// unknown-verb error.
func runGroup(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	return unknownCommand(cmd, args[0])
}

// runHelp runs `help [VERB...]`: the verb's help, or an unknown-verb error.
func runHelp(cmd *cobra.Command, args []string) error {
	target, rest, err := cmd.Root().Find(args)
	if err != nil {
		return usageError(err)
	}
	if len(rest) > 0 {
		return unknownCommand(target, rest[0])
	}
	return target.Help()
}

// unknownCommand is the usage error for an argument of group that names
// none of its verbs, with cobra's suggestions.
func unknownCommand(group *cobra.Command, arg string) error {
	msg := fmt.Sprintf("unknown command %q for %q", arg, group.CommandPath())
	if s := group.SuggestionsFor(arg); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return usageError(fmt.Errorf("%s; see '%s --help'", msg, group.CommandPath()))
}
