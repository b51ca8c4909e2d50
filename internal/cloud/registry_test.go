package cloud_test

import (
	"strings"
	"testing"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/cloud/cloudtest"
)

func TestProvidersGet(t *testing.T) {
	ps := cloud.NewProviders(cloudtest.New(azure.TagRules))
	if p, err := ps.Get("fake"); err != nil || p.Name() != "fake" {
		t.Fatalf("Get(fake) = %v, %v", p, err)
	}
	_, err := ps.Get("aws")
	if err == nil || !strings.Contains(err.Error(), `"aws" is not configured`) || !strings.Contains(err.Error(), "configured: fake") {
		t.Fatalf("Get(aws) error = %v, want it to name the configured providers", err)
	}
}

// classifiedOnly is a provider that supports resources found by classifier
// tags and not the node sync.
type classifiedOnly struct{ cloud.ClassifiedProvider }

// TestProvidersByJob: a provider is handed out for the jobs it supports, and
// asking it for another says which job it lacks and which it has.
func TestProvidersByJob(t *testing.T) {
	full := cloudtest.New(azure.TagRules)
	ps := cloud.Providers{"azure": full, "aws": classifiedOnly{cloudtest.New(aws.TagRules)}}
	if p, err := ps.NodeProvider("azure"); err != nil || p != full {
		t.Fatalf("NodeProvider(azure) = %v, %v", p, err)
	}
	if _, err := ps.ClassifiedProvider("aws"); err != nil {
		t.Fatalf("ClassifiedProvider(aws): %v", err)
	}
	_, err := ps.NodeProvider("aws")
	if err == nil || !strings.Contains(err.Error(), `provider "aws" does not support the node sync`) ||
		!strings.Contains(err.Error(), "supports only resources found by classifier tags") {
		t.Fatalf("NodeProvider(aws) error = %v, want it to name the missing job and the supported one", err)
	}
	if _, err := ps.ClassifiedProvider("gcp"); err == nil || !strings.Contains(err.Error(), `"gcp" is not configured`) {
		t.Fatalf("ClassifiedProvider(gcp) error = %v, want not configured", err)
	}
}
