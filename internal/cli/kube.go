package cli

import (
	"fmt"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/scheme"
)

// kubeScheme is the scheme of the operator verbs' clients: the Kubernetes
// types and the tagsync API, built once.
var kubeScheme = sync.OnceValue(scheme.New)

// kubeFlags are the cluster connection flags of the operator verbs, the same
// as kubectl's (--kubeconfig, --context, -n/--namespace, --server, --token,
// ...), so that `tagsync` and `kubectl tagsync` reach the same cluster as
// kubectl would.
type kubeFlags struct {
	config *genericclioptions.ConfigFlags
}

// addKubeFlags registers kubectl's connection flags on cmd's persistent flags
// and returns them.
func addKubeFlags(cmd *cobra.Command) *kubeFlags {
	f := &kubeFlags{config: genericclioptions.NewConfigFlags(true)}
	f.config.AddFlags(cmd.PersistentFlags())
	return f
}

// namespace returns the namespace the flags select: -n, else the current
// context's, else "default".
func (f *kubeFlags) namespace() (string, error) {
	ns, _, err := f.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

// restConfig returns the REST config of the selected cluster.
func (f *kubeFlags) restConfig() (*rest.Config, error) {
	cfg, err := f.config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig (set --kubeconfig or KUBECONFIG, or run in a cluster): %w", err)
	}
	return cfg, nil
}

// client returns a controller-runtime client for the selected cluster that
// knows the tagsync API and the Kubernetes types.
func (f *kubeFlags) client() (client.Client, error) {
	cfg, err := f.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: kubeScheme()})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	return c, nil
}
