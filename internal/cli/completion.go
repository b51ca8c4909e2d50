package cli

import (
	"github.com/spf13/cobra"
)

// registerOutputCompletion completes -o with formats.
func registerOutputCompletion(cmd *cobra.Command, formats ...string) {
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}
