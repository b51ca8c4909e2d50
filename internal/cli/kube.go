package cli

import (
	"fmt"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/scheme"
)

// kubeScheme is the scheme of the operator verbs' clients: the Kubernetes
// types and the tagsync API, built once.
var kubeScheme = sync.OnceValue(scheme.New)

// kubeFlags are the cluster connection flags of the operator verbs, the same
// as kubectl's (--kubeconfig, --context, -n/--namespace, --server, --token,
// --as, ...; $KUBECONFIG; in-cluster config as a fallback), so that `tagsync`
// and `kubectl tagsync` reach the same cluster as kubectl would.
//
// They are client-go's clientcmd flags, which kubectl's (cli-runtime's
// genericclioptions) wrap. genericclioptions itself is not used: it links
// kustomize, and with it Go's plugin package, which forces external linking
// and adds ~50 MiB of resident binary to every `tagsync run` (see
// docs/performance.md, "Memory").
type kubeFlags struct {
	loading   *clientcmd.ClientConfigLoadingRules
	overrides clientcmd.ConfigOverrides
	loader    clientcmd.ClientConfig
}

// addKubeFlags registers kubectl's connection flags on cmd's persistent flags
// and returns them.
func addKubeFlags(cmd *cobra.Command) *kubeFlags {
	f := &kubeFlags{loading: clientcmd.NewDefaultClientConfigLoadingRules()}
	fs := cmd.PersistentFlags()
	fs.StringVar(&f.loading.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use for CLI requests.")
	clientcmd.BindOverrideFlags(&f.overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
	return f
}

// clientConfig returns the kubeconfig loader the flags describe (built once,
// after the flags are parsed).
func (f *kubeFlags) clientConfig() clientcmd.ClientConfig {
	if f.loader == nil {
		f.loader = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(f.loading, &f.overrides)
	}
	return f.loader
}

// namespace returns the namespace the flags select: -n, else the current
// context's, else "default".
func (f *kubeFlags) namespace() (string, error) {
	ns, _, err := f.clientConfig().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

// restConfig returns the REST config of the selected cluster.
func (f *kubeFlags) restConfig() (*rest.Config, error) {
	cfg, err := f.clientConfig().ClientConfig()
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
