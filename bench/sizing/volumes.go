package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/armsim"
)

// The workload tags estate: volumes disks in volumeGroup of the Nodes'
// subscription, each behind a bound PersistentVolume of a claim in one of
// volumeNamespaces namespaces labelled cost-center=cc-N, and one
// WorkloadTagPolicy that gives each disk its namespace's cost-center. The
// disks already carry it (the steady state after the workload tags
// benchmark's cold run): the sizing run measures the memory of following
// the PersistentVolumes, claims and namespaces, not ARM's write quota,
// which bench/workloadtags measures.
const (
	volumeGroup  = "MC_sizing_volumes"
	volumePolicy = "costs"
	volumeKey    = "cost-center"
)

// seedVolumes creates the disks in armsim and the namespaces, claims and
// PersistentVolumes that name them.
func (b *bench) seedVolumes(ctx context.Context) error {
	n := b.o.volumes
	if n == 0 {
		return nil
	}
	start := time.Now()
	if _, err := b.az.Arm.CreateResourceGroup(benchkit.NodeSubID, armsim.ResourceGroup{Name: volumeGroup, Location: "westeurope"}); err != nil {
		return err
	}
	disks := make([]string, n)
	for i := range n {
		id, err := b.az.Arm.CreateResource(benchkit.NodeSubID, volumeGroup, armsim.Resource{Type: armsim.TypeDisk, Name: fmt.Sprintf("pvc-%05d", i),
			Tags: map[string]string{"k8s-azure-created-by": "kubernetes-azure-dd", volumeKey: costCenter(b.volumeNamespace(i))}})
		if err != nil {
			return err
		}
		disks[i] = id
	}
	c, err := client.New(benchkit.Fast(b.Mgmt.Config), client.Options{Scheme: b.C.Scheme()})
	if err != nil {
		return err
	}
	for ns := range b.o.volumeNamespaces {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: volumeNamespaceName(ns),
			Labels: map[string]string{volumeKey: costCenter(ns)}}}); err != nil {
			return err
		}
	}
	err = benchkit.Parallel(ctx, n, b.o.createWorkers, func(ctx context.Context, i int) error {
		pvc, pv := boundVolume(i, volumeNamespaceName(b.volumeNamespace(i)), disks[i])
		if err := c.Create(ctx, pvc); err != nil {
			return err
		}
		return c.Create(ctx, pv)
	})
	benchkit.Logf("seeded %d disks and their PersistentVolumes and claims in %d namespaces in %s", n, b.o.volumeNamespaces, time.Since(start).Round(time.Millisecond))
	return err
}

// volumeNamespace is the namespace (by number) of the i-th volume.
func (b *bench) volumeNamespace(i int) int { return i % max(b.o.volumeNamespaces, 1) }

// volumeNamespaceName names the ns-th namespace of volumes.
func volumeNamespaceName(ns int) string { return fmt.Sprintf("team-%03d", ns) }

// costCenter is the ns-th namespace's cost-center.
func costCenter(ns int) string { return fmt.Sprintf("cc-%03d", ns) }

// volumesPolicy is the WorkloadTagPolicy of the estate (nil without
// volumes).
func (b *bench) volumesPolicy() *v1alpha1.WorkloadTagPolicy {
	if b.o.volumes == 0 {
		return nil
	}
	return &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: volumePolicy},
		Spec: v1alpha1.WorkloadTagPolicySpec{Provider: v1alpha1.ProviderAzure,
			Tags: []v1alpha1.WorkloadTag{{Key: volumeKey, Value: "${namespace.labels['" + volumeKey + "']}"}}}}
}

// boundVolume is the i-th claim in ns and the PersistentVolume of disk
// bound to it, as the Azure Disk CSI driver's external-provisioner and the
// PersistentVolume controller leave them on AKS: their annotations,
// finalizers, the CSI volume attributes, the zone's node affinity, the
// storage class. (The API server keeps what a status subresource would
// set only through it; the claim's and volume's phases stay empty here.)
func boundVolume(i int, ns, disk string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	size := corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("8Gi")}
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	class, claim, name := "managed-csi", fmt.Sprintf("data-%05d", i), fmt.Sprintf("pvc-%08x-4b1e-4f3a-9c2d-%012x", i, i)
	fs := corev1.PersistentVolumeFilesystem
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim,
		Labels: map[string]string{"app.kubernetes.io/name": "db", "app.kubernetes.io/instance": claim},
		Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
			"volume.beta.kubernetes.io/storage-provisioner": "disk.csi.azure.com", "volume.kubernetes.io/storage-provisioner": "disk.csi.azure.com",
			"volume.kubernetes.io/selected-node": fmt.Sprintf("aks-pool%02d-12345678-vmss%06x", i%100, i%100)},
		Finalizers: []string{"kubernetes.io/pvc-protection"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwo, Resources: corev1.VolumeResourceRequirements{Requests: size},
			StorageClassName: &class, VolumeMode: &fs, VolumeName: name}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "disk.csi.azure.com",
			"volume.kubernetes.io/provisioner-deletion-secret-name": "", "volume.kubernetes.io/provisioner-deletion-secret-namespace": ""},
		Finalizers: []string{"external-provisioner.volume.kubernetes.io/finalizer", "kubernetes.io/pv-protection", "external-attacher/disk-csi-azure-com"}},
		Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: rwo, StorageClassName: class, VolumeMode: &fs,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim,
				UID: types.UID(fmt.Sprintf("%08x-4b1e-4f3a-9c2d-%012x", i, i)), ResourceVersion: "1234567"},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.disk.csi.azure.com/zone", Operator: corev1.NodeSelectorOpIn,
					Values: []string{fmt.Sprintf("westeurope-%d", i%3+1)}}}}}}},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.azure.com",
				VolumeHandle: disk, FSType: "ext4", VolumeAttributes: map[string]string{
					"csi.storage.k8s.io/pv/name": name, "csi.storage.k8s.io/pvc/name": claim, "csi.storage.k8s.io/pvc/namespace": ns,
					"requestedsizegib": "8", "skuname": "StandardSSD_LRS",
					"storage.kubernetes.io/csiProvisionerIdentity": "1764390000000-8081-disk.csi.azure.com"}}}}}
	return pvc, pv
}
