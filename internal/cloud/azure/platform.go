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

// CreatorKeys are the keys the creators of a cluster's workload resources
// write on Azure: a WorkloadTagPolicy may not write them. Treat it as
// read-only.
var CreatorKeys = []tags.PlatformKey{
	{Pattern: "kubernetes.io-created-for-*", Owner: "the Azure Disk CSI driver",
		Why:    "kubernetes.io-created-for-pv-name, -pvc-name and -pvc-namespace name the volume and claim a disk was created for (with the provisioner's --extra-create-metadata, which the driver's manifests set)",
		Source: "kubernetes-sigs/azuredisk-csi-driver pkg/azureconstants/azure_constants.go, pkg/azureutils/azure_disk_utils.go"},
	{Pattern: "k8s-azure-*", Owner: "the Azure cloud provider and the Azure CSI drivers",
		Why:    "k8s-azure-created-by (kubernetes-azure-dd on disks), k8s-azure-service, k8s-azure-cluster-name, k8s-azure-dns-label-service: what created a resource and for which Service; the cloud provider finds its public IPs by them",
		Source: "kubernetes-sigs/cloud-provider-azure pkg/consts/consts.go; kubernetes-sigs/azuredisk-csi-driver pkg/azuredisk/azure_managedDiskController.go"},
}

// CreatorKeys returns CreatorKeys.
func (p *Provider) CreatorKeys() []tags.PlatformKey { return CreatorKeys }
