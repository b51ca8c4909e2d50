package nodetags

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/tags"
)

// TestConfigPlatformTags: the platform's keys are out of scope by default
// (per provider, compared as it compares names), includePlatformTags opts
// keys in, a malformed entry is an invalid spec and one that names no
// platform key a warning.
func TestConfigPlatformTags(t *testing.T) {
	cfg := func(spec v1alpha1.NodeTagSyncSpec) syncConfig {
		t.Helper()
		rules, platform := azure.TagRules, azure.PlatformKeys
		if spec.Provider == v1alpha1.ProviderAWS {
			rules, platform = aws.TagRules, aws.PlatformKeys
		}
		c, err := configFrom(spec, rules, platform)
		if err != nil {
			t.Fatalf("configFrom(%+v): %v", spec, err)
		}
		return c
	}
	in := func(c syncConfig, name string) bool { return c.filter.Match(c.nameCase(), name) }

	onAWS := cfg(v1alpha1.NodeTagSyncSpec{Provider: v1alpha1.ProviderAWS})
	for _, name := range []string{"karpenter.sh/nodepool", "eks:cluster-name", "k8s.io/cluster-autoscaler/enabled", "kubernetes.io/cluster/prod"} {
		if in(onAWS, name) {
			t.Errorf("aws: %s in scope by default", name)
		}
	}
	if !in(onAWS, "team") || !in(onAWS, "Karpenter.sh/nodepool") || !in(onAWS, "aks-managed-poolName") {
		t.Error("aws: keys the AWS platform does not own are in scope (AWS keys are case-sensitive)")
	}
	onAzure := cfg(v1alpha1.NodeTagSyncSpec{})
	if in(onAzure, "aks-managed-poolName") || in(onAzure, "AKS-MANAGED-orchestrator") || !in(onAzure, "karpenter.sh/nodepool") {
		t.Error("azure (the default provider): aks-managed-* out of scope in any case, other keys in")
	}

	opted := cfg(v1alpha1.NodeTagSyncSpec{Provider: v1alpha1.ProviderAWS, IncludePlatformTags: []v1alpha1.TagPattern{"karpenter.sh/nodepool"}})
	if !in(opted, "karpenter.sh/nodepool") || in(opted, "karpenter.sh/nodeclaim") {
		t.Error("includePlatformTags opts in the key it names, and only that one")
	}
	if len(opted.warnings) != 0 {
		t.Errorf("warnings %q for a valid opt-in", opted.warnings)
	}

	useless := cfg(v1alpha1.NodeTagSyncSpec{Provider: v1alpha1.ProviderAWS, IncludePlatformTags: []v1alpha1.TagPattern{"team", "aks-managed-*"}})
	if len(useless.warnings) != 2 || !strings.Contains(useless.warnings[0], `includePlatformTags[0] "team" matches no platform tag on aws`) {
		t.Errorf("warnings %q, want one per entry that opts nothing in", useless.warnings)
	}

	onlyPlatform := cfg(v1alpha1.NodeTagSyncSpec{Provider: v1alpha1.ProviderAWS, IncludeTags: []v1alpha1.TagPattern{"karpenter.sh/*"}})
	if len(onlyPlatform.warnings) != 1 || !strings.Contains(onlyPlatform.warnings[0], "exclude every tag") {
		t.Errorf("warnings %q, want: includeTags of platform keys only syncs nothing", onlyPlatform.warnings)
	}

	_, err := configFrom(v1alpha1.NodeTagSyncSpec{IncludePlatformTags: []v1alpha1.TagPattern{"["}}, azure.TagRules, azure.PlatformKeys)
	if err == nil || !strings.Contains(err.Error(), `includePlatform[0] "["`) {
		t.Errorf("a malformed includePlatformTags entry: err %v", err)
	}
}

// TestDocsListThePlatformKeys: the table of docs/nodetagsync.md "Tags the
// platform owns" lists exactly the keys the code keeps out of scope, in its
// order.
func TestDocsListThePlatformKeys(t *testing.T) {
	text, err := os.ReadFile("../../../docs/nodetagsync.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(text), "\n## Tags the platform owns\n")
	if !ok {
		t.Fatal(`docs/nodetagsync.md has no section "Tags the platform owns"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	docs := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		provider := map[string]string{"AWS": "aws", "Azure": "azure"}[strings.TrimSpace(cells[1])]
		if provider == "" {
			continue
		}
		docs[provider] = append(docs[provider], strings.Trim(strings.TrimSpace(cells[2]), "`"))
	}
	for provider, keys := range map[string][]tags.PlatformKey{"aws": aws.PlatformKeys, "azure": azure.PlatformKeys} {
		if got, want := docs[provider], tags.PlatformPatterns(keys); !slices.Equal(got, want) {
			t.Errorf("%s: the docs list %q, the code %q", provider, got, want)
		}
	}
}
