// Command tagsync is the tagsync controller manager and operator CLI.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	// The image has no CA certificate files (an empty base): the Azure and
	// AWS clients verify TLS against these roots when the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/tagsync/tagsync/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := cli.NewCommandTree(os.Args[0])
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tagsync:", err)
		os.Exit(cli.ExitCode(err))
	}
}
