package cloud_test

import (
	"strings"
	"testing"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/cloudtest"
	"github.com/tagsync/tagsync/internal/tags"
)

func TestProvidersGet(t *testing.T) {
	ps := cloud.NewProviders(cloudtest.New(tags.AzureRules))
	if p, err := ps.Get("fake"); err != nil || p.Name() != "fake" {
		t.Fatalf("Get(fake) = %v, %v", p, err)
	}
	_, err := ps.Get("aws")
	if err == nil || !strings.Contains(err.Error(), `"aws" is not configured`) || !strings.Contains(err.Error(), "configured: fake") {
		t.Fatalf("Get(aws) error = %v, want it to name the configured providers", err)
	}
}
