package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tagsync/tagsync/internal/version"
)

// NewVersionCommand returns `tagsync version`, which prints the build's
// version, commit, build date (the commit's time) and Go toolchain, the same
// line as `tagsync --version`; -o json|yaml prints them as data.
func NewVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the tagsync version, commit, build date and Go version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != outputTable {
				return printData(cmd.OutOrStdout(), output, version.Read())
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.Read())
			return err
		},
	}
	addOutputFlag(cmd, &output, "json and yaml: version, commit, date, goVersion and platform")
	return cmd
}
