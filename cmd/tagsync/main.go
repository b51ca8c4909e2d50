// Command tagsync is the tagsync controller manager and operator CLI.
package main

import (
	"fmt"
	"os"

	"github.com/tagsync/tagsync/internal/cli"
)

func main() {
	root := cli.NewRootCommand()
	root.AddCommand(
		cli.NewVersionCommand(),
		cli.NewArmsimCommand(),
	)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tagsync:", err)
		os.Exit(1)
	}
}
