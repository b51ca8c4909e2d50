package tags

// The tag rules of the two clouds tagsync ships, as the tests of this
// package use them. The real ones belong to the clouds' packages
// (internal/cloud/azure.TagRules, internal/cloud/aws.TagRules); this
// package never names a cloud outside its tests.
var (
	AzureRules = Rules{
		MaxTags:            50,
		MaxNameLen:         512,
		MaxValueLen:        256,
		ForbiddenNameChars: `<>%&\?/`,
		ReservedPrefixes:   []string{"microsoft", "azure", "windows"},
		CaseInsensitive:    true,
	}
	AzureStorageRules = AzureRules.WithMaxNameLen(128)
	AWSRules          = Rules{
		MaxTags:            50,
		MaxNameLen:         128,
		MaxValueLen:        256,
		CountRunes:         true,
		AllowedPunctuation: "+-=._:/@",
		ReservedPrefixes:   []string{"aws:"},
	}
)

// testPlatformKeys are the patterns of the two clouds' platform keys
// (internal/cloud/azure.PlatformKeys, internal/cloud/aws.PlatformKeys).
var testPlatformKeys = map[string][]PlatformKey{
	"aws":   {{Pattern: "tagsync-heartbeat"}, {Pattern: "eks:*"}, {Pattern: "kubernetes.io/cluster/*"}, {Pattern: "k8s.io/cluster-autoscaler/*"}, {Pattern: "karpenter.sh/*"}, {Pattern: "karpenter.k8s.aws/*"}, {Pattern: "alpha.eksctl.io/*"}, {Pattern: "eksctl.*"}, {Pattern: "aws-node-termination-handler/*"}, {Pattern: "sigs.k8s.io/cluster-api-provider-aws/*"}, {Pattern: "KubernetesCluster"}, {Pattern: "kops.k8s.io/*"}},
	"azure": {{Pattern: "tagsync-heartbeat"}, {Pattern: "aks-managed-*"}, {Pattern: "microsoft"}},
}
