package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// ExitRefused is the exit code of `tagsync tags` when the edit breaks the
// tag rules (checked before the API call) or the API server's admission
// refuses it.
const ExitRefused = 3

// tagsFlags are the settings of `tagsync tags VERB`.
type tagsFlags struct {
	kube    *kubeFlags
	dryRun  string
	output  string
	replace bool
}

// beforeTagsPatch, when set, runs before each patch `tags` sends (tests
// make a concurrent edit there).
var beforeTagsPatch func()

// NewTagsCommand returns `tagsync tags`, whose verbs add, update, delete
// and ignore edit the tag request of an AzureMetadata or AWSMetadata object.
func NewTagsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tags",
		Short: "Edit the tag request of an AzureMetadata or AWSMetadata object",
		Long: `tags edits the request of an AzureMetadata or AWSMetadata object (docs/metadata.md):
its opcode (add, update or delete), its resourceTags and its ignoreTags.

  add    KEY=VALUE...  opcode add: write these tags where absent, never overwrite
  update KEY=VALUE...  opcode update: set these tags, overwriting other values
  delete KEY[=VALUE]   opcode delete: remove these tags (with =VALUE only where
                       they carry that value)
  ignore KEY...        never read nor write these tags (ignoreTags)

KEY- takes KEY out of the request (released: it stays on the resources as it
is), or with ignore out of ignoreTags. An object has one opcode: a verb that
would change the opcode of a request keeping other tags is refused unless
--replace makes the given tags the whole request.

The result is checked before the API call with the rules the API server's
admission applies and the cloud's tag rules the controller approves; the patch
carries the object's resourceVersion, and is retried on a concurrent edit.

Exit codes:
  0  edited (or unchanged, or shown with --dry-run)
  1  the object does not exist, or the cluster could not be reached
  2  wrong flags or arguments
  3  refused: the result breaks the tag rules, or the API server refused it`,
	}
	for _, verb := range []string{"add", "update", "delete", "ignore"} {
		cmd.AddCommand(newTagsVerbCommand(verb))
	}
	return cmd
}

// tagsVerbUsage is each verb's argument shape and example.
var tagsVerbUsage = map[string][2]string{
	"add":    {"add TYPE/NAME KEY=VALUE... [KEY-...]", "  tagsync tags add azuremetadata/prod-azure env=prod cost-center=eng-42 -n platform"},
	"update": {"update TYPE/NAME KEY=VALUE... [KEY-...]", "  tagsync tags update awsmetadata/prod-aws env=staging --dry-run"},
	"delete": {"delete TYPE/NAME KEY[=VALUE]... [--replace]", "  tagsync tags delete azuremetadata/prod-azure env --replace"},
	"ignore": {"ignore TYPE/NAME KEY... [KEY-...]", "  tagsync tags ignore azuremetadata/prod-azure created-by policy-owner-"},
}

func newTagsVerbCommand(verb string) *cobra.Command {
	f := &tagsFlags{}
	cmd := &cobra.Command{
		Use:     tagsVerbUsage[verb][0],
		Short:   fmt.Sprintf("Edit an object's request with opcode %s", verb),
		Example: tagsVerbUsage[verb][1],
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageError(fmt.Errorf("%s needs TYPE/NAME and at least one tag", verb))
			}
			return nil
		},
		RunE:              func(cmd *cobra.Command, args []string) error { return runTags(cmd, f, verb, args) },
		ValidArgsFunction: completeProviderObjects(f),
	}
	if verb == "ignore" {
		cmd.Short = "Add names to an object's ignoreTags (KEY- removes them)"
	}
	f.kube = addKubeFlags(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.dryRun, "dry-run", "none", `"client" shows the result without sending it; "server" also has the API server check it (admission) without storing it`)
	fl.Lookup("dry-run").NoOptDefVal = "client"
	if verb != "ignore" {
		fl.BoolVar(&f.replace, "replace", false, "make the given tags the whole request (other tags are released)")
	}
	addOutputFlag(cmd, &f.output, "json and yaml: the resulting object instead of the change")
	_ = cmd.RegisterFlagCompletionFunc("dry-run", cobra.FixedCompletions([]string{"none", "client", "server"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
