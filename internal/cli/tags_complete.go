package cli

import (
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// completeProviderObjects completes the first argument of a `tags` verb
// with the AzureMetadata and AWSMetadata objects of the namespace, as
// TYPE/NAME; later arguments (tags) get no completion.
func completeProviderObjects(f *tagsFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, err := f.kube.namespace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		c, err := f.kube.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, k := range []providerKind{azureKind, awsKind} {
			list := k.newList()
			if err := c.List(cmd.Context(), list, client.InNamespace(ns)); err != nil {
				continue
			}
			for _, n := range listNames(list) {
				out = append(out, k.resource+"/"+n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
