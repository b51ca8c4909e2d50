package workloadtags

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// TrimVolume is the cache transform of PersistentVolumes the controller
// works with: of a PersistentVolume it reads the name, the claim it is bound
// to, its phase and the reference to its disk (a CSI driver and volume
// handle, an in-tree Azure disk URI, Azure Files share or EBS volume ID),
// so the cache keeps those and drops the rest (annotations, finalizers, the
// CSI volume attributes and secrets, node affinity, capacity, mount
// options). A cluster's PersistentVolumes outnumber its Nodes; cached whole
// they cost tens of MiB (docs/operations.md, sizing). Idempotent.
var TrimVolume toolscache.TransformFunc = func(in any) (any, error) {
	pv, ok := in.(*corev1.PersistentVolume)
	if !ok {
		return in, nil
	}
	out := &corev1.PersistentVolume{TypeMeta: pv.TypeMeta, ObjectMeta: keptMeta(pv.ObjectMeta, false)}
	if r := pv.Spec.ClaimRef; r != nil {
		out.Spec.ClaimRef = &corev1.ObjectReference{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID}
	}
	out.Spec.PersistentVolumeSource = keptSource(pv.Spec.PersistentVolumeSource)
	out.Status.Phase = pv.Status.Phase
	return out, nil
}

// TrimClaim is the cache transform of PersistentVolumeClaims: templates
// read a claim's names, labels and annotations, never its spec or status,
// which the cache drops. Idempotent.
var TrimClaim toolscache.TransformFunc = func(in any) (any, error) {
	pvc, ok := in.(*corev1.PersistentVolumeClaim)
	if !ok {
		return in, nil
	}
	return &corev1.PersistentVolumeClaim{TypeMeta: pvc.TypeMeta, ObjectMeta: keptMeta(pvc.ObjectMeta, true)}, nil
}

// keptMeta is what the cache keeps of an object's metadata: its identity,
// its deletion, and (withAnnotations) its labels and annotations.
func keptMeta(m metav1.ObjectMeta, withAnnotations bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp}
	if withAnnotations {
		out.Labels, out.Annotations = m.Labels, m.Annotations
	}
	return out
}

// keptSource is what volumeOf reads of a volume's source.
func keptSource(s corev1.PersistentVolumeSource) corev1.PersistentVolumeSource {
	var out corev1.PersistentVolumeSource
	if s.CSI != nil {
		out.CSI = &corev1.CSIPersistentVolumeSource{Driver: s.CSI.Driver, VolumeHandle: s.CSI.VolumeHandle}
	}
	if s.AzureDisk != nil {
		out.AzureDisk = &corev1.AzureDiskVolumeSource{DiskName: s.AzureDisk.DiskName, DataDiskURI: s.AzureDisk.DataDiskURI}
	}
	if s.AzureFile != nil {
		out.AzureFile = &corev1.AzureFilePersistentVolumeSource{ShareName: s.AzureFile.ShareName}
	}
	if s.AWSElasticBlockStore != nil {
		out.AWSElasticBlockStore = &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: s.AWSElasticBlockStore.VolumeID}
	}
	return out
}
