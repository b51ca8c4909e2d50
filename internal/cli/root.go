// Package cli holds the cobra commands of the tagsync binary. Each command
// lives in its own file; cmd/tagsync only wires them together.
package cli

import (
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
		Long: `tagsync keeps cloud resource tags and Kubernetes labels in agreement:
Azure VM and scale-set tags with node labels (both ways), declaratively and
cheaply on cloud API quota.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get(),
	}
	root.SetVersionTemplate(version.Read().String() + "\n")
	return root
}
