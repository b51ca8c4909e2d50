package cli

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/azure"
)

// checkPlanCredentials obtains, before anything is planned, an identity
// from each cloud the cluster's objects will have plan read, so that a
// credential that cannot work is one error naming what to configure, and
// exit code 1, instead of the same failure once per Node and a plan of
// no writes. A cloud no object uses is not asked.
func checkPlanCredentials(ctx context.Context, c client.Reader, providers cloud.Providers) error {
	used, err := cloudsInUse(ctx, c)
	if err != nil {
		return err
	}
	for name, p := range providers {
		if !used[name] {
			continue
		}
		if err := whoAmI(ctx, p); err != nil {
			return fmt.Errorf("%s: no credentials: %w\nconfigure them as for tagsync run (the --%s-* flags or their environment variables); "+
				"tagsync login %s checks them", p.Name(), err, p.Name(), p.Name())
		}
	}
	return nil
}

// whoAmI obtains the provider's identity.
func whoAmI(ctx context.Context, p cloud.Provider) error {
	switch pr := p.(type) {
	case *azure.Provider:
		_, err := pr.WhoAmI(ctx)
		return err
	case *aws.Provider:
		_, err := pr.WhoAmI(ctx)
		return err
	}
	return nil
}

// cloudsInUse names the clouds the cluster's NodeTagSyncs, AzureMetadata
// and AWSMetadata read.
func cloudsInUse(ctx context.Context, c client.Reader) (map[string]bool, error) {
	used := map[string]bool{}
	var syncs v1alpha1.NodeTagSyncList
	if err := c.List(ctx, &syncs); err != nil {
		return nil, fmt.Errorf("listing NodeTagSyncs: %w", err)
	}
	for _, s := range syncs.Items {
		used[orDefaultProvider(string(s.Spec.Provider))] = true
	}
	var az v1alpha1.AzureMetadataList
	if err := c.List(ctx, &az, client.Limit(1)); err != nil {
		return nil, fmt.Errorf("listing AzureMetadata: %w", err)
	}
	used["azure"] = used["azure"] || len(az.Items) > 0
	var aw v1alpha1.AWSMetadataList
	if err := c.List(ctx, &aw, client.Limit(1)); err != nil {
		return nil, fmt.Errorf("listing AWSMetadata: %w", err)
	}
	used["aws"] = used["aws"] || len(aw.Items) > 0
	return used, nil
}
