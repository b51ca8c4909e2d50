// Command kube-apiserver builds the upstream Kubernetes API server from Go
// modules so that tests run against a real control plane without downloads
// beyond the Go module proxy.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // JSON log format, as upstream registers it
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
