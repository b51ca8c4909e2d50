package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tagsync/tagsync/internal/version"
)

// NewVersionCommand returns `tagsync version`, which prints the build's
// version, commit, build date (the commit's time) and Go toolchain, the same
// line as `tagsync --version`.
func NewVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the tagsync version, commit, build date and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.Read())
			return err
		},
	}
}
