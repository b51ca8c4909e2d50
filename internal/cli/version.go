package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/tagsync/tagsync/internal/version"
)

// NewVersionCommand returns `tagsync version`, which prints the build's
// version and the Go toolchain it was built with.
func NewVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the tagsync version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "tagsync %s (%s, %s/%s)\n",
				version.Get(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
