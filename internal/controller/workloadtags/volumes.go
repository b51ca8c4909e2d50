package workloadtags

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// CSI drivers whose volumes are one cloud resource per PersistentVolume,
// by the cloud they run on; and those whose volumes are shares many
// workloads use (docs/workload-tags.md cites each).
var (
	diskDrivers = map[string]v1alpha1.Provider{
		"disk.csi.azure.com": v1alpha1.ProviderAzure,
		"ebs.csi.aws.com":    v1alpha1.ProviderAWS,
	}
	sharedDrivers = map[string]v1alpha1.Provider{
		"file.csi.azure.com": v1alpha1.ProviderAzure,
		"blob.csi.azure.com": v1alpha1.ProviderAzure,
		"efs.csi.aws.com":    v1alpha1.ProviderAWS,
	}
)

// ref is the cloud resource a workload causes (the disk behind a
// PersistentVolume, a Service's public IP).
type ref struct {
	// id is the resource's ID (Azure: the ARM ID; AWS: the EBS volume
	// ID); empty for a shared one or one not made yet.
	id string
	// shared names a backend many workloads share, which is reported and
	// never tagged for one workload.
	shared string
	// notYet: the resource is not made yet (a Service whose public IP
	// the cloud provider has not made): pending.
	notYet bool
}

// volumeOf returns the resource behind pv on provider; ok is false when
// pv is not a volume of that cloud tagsync knows.
func volumeOf(pv *corev1.PersistentVolume, provider v1alpha1.Provider) (ref, bool) {
	s := pv.Spec.PersistentVolumeSource
	switch {
	case s.CSI != nil && diskDrivers[s.CSI.Driver] == provider:
		id := s.CSI.VolumeHandle
		return ref{id: id}, validID(provider, id)
	case s.CSI != nil && sharedDrivers[s.CSI.Driver] == provider:
		return ref{shared: s.CSI.Driver + " share " + s.CSI.VolumeHandle}, true
	case s.AzureDisk != nil && provider == v1alpha1.ProviderAzure:
		return ref{id: s.AzureDisk.DataDiskURI}, validID(provider, s.AzureDisk.DataDiskURI)
	case s.AzureFile != nil && provider == v1alpha1.ProviderAzure:
		return ref{shared: "Azure Files share " + s.AzureFile.ShareName}, true
	case s.AWSElasticBlockStore != nil && provider == v1alpha1.ProviderAWS:
		id := ebsVolumeID(s.AWSElasticBlockStore.VolumeID)
		return ref{id: id}, validID(provider, id)
	}
	return ref{}, false
}

// ebsVolumeID is the volume ID of an in-tree EBS volume, written
// aws://<zone>/vol-... or vol-....
func ebsVolumeID(s string) string {
	return s[strings.LastIndex(s, "/")+1:]
}

// validID reports whether id has the shape of a disk of provider: an ARM
// managed disk ID, or an EBS volume ID.
func validID(provider v1alpha1.Provider, id string) bool {
	return hasShape(provider, id, "vol-", "microsoft.compute/disks")
}

// hasShape reports whether id names a resource of provider: on AWS an ID
// starting with awsPrefix, on Azure an ARM ID of the (lower-case) type
// azureType.
func hasShape(provider v1alpha1.Provider, id, awsPrefix, azureType string) bool {
	if provider == v1alpha1.ProviderAWS {
		return strings.HasPrefix(id, awsPrefix)
	}
	lower := strings.ToLower(id)
	return strings.HasPrefix(lower, "/subscriptions/") && strings.Contains(lower, "/providers/"+azureType+"/")
}
