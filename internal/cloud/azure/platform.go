package azure

import (
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// PlatformKeys are the keys AKS writes on the scale sets and VMs behind
// nodes and depends on: the node sync leaves them alone unless a
// NodeTagSync opts one in (includePlatformTags). Treat it as read-only.
var PlatformKeys = []tags.PlatformKey{
	cloud.HeartbeatKey,
	{Pattern: "aks-managed-*", Owner: "Azure Kubernetes Service",
		Why:    "AKS writes aks-managed-* tags (aks-managed-poolName, ...) on node-pool scale sets and VMs; the node pool is their source of truth and AKS rewrites them",
		Source: "learn.microsoft.com/azure/aks/faq (node resource group: do not modify or delete Azure-created tags)"},
}

// TagRules are Azure Resource Manager's tag rules for most resources: at
// most 50 tags, names up to 512 and values up to 256 characters, no < > % &
// \ ? / in names, the prefixes microsoft, azure and windows reserved for
// Azure, and names case-insensitive. Treat it as read-only.
var TagRules = tags.Rules{
	MaxTags:            50,
	MaxNameLen:         512,
	MaxValueLen:        256,
	ForbiddenNameChars: `<>%&\?/`,
	ReservedPrefixes:   []string{"microsoft", "azure", "windows"},
	CaseInsensitive:    true,
}

// StorageTagRules are TagRules for storage accounts, whose tag names are
// limited to 128 characters. Treat it as read-only.
var StorageTagRules = TagRules.WithMaxNameLen(128)
