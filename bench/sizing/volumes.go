package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	size := corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("8Gi")}
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	err = benchkit.Parallel(ctx, n, b.o.createWorkers, func(ctx context.Context, i int) error {
		ns, claim := volumeNamespaceName(b.volumeNamespace(i)), fmt.Sprintf("data-%05d", i)
		if err := c.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwo, Resources: corev1.VolumeResourceRequirements{Requests: size}}}); err != nil {
			return err
		}
		return c.Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pv-%05d", i)},
			Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: rwo, ClaimRef: &corev1.ObjectReference{Namespace: ns, Name: claim},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.azure.com", VolumeHandle: disks[i]}}}})
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

// waitVolumes waits until the policy reports every disk in sync.
func (b *bench) waitVolumes(ctx context.Context) error {
	deadline := time.Now().Add(b.o.Timeout)
	var p v1alpha1.WorkloadTagPolicy
	for {
		if err := b.C.Get(ctx, client.ObjectKey{Name: volumePolicy}, &p); err != nil {
			return err
		}
		if int(p.Status.InSync) == b.o.volumes && p.Status.ObservedGeneration == p.Generation {
			return nil
		}
		if err := b.ctrl.Running(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s the policy has %d of %d disks in sync (%d resources)", b.o.Timeout, p.Status.InSync, b.o.volumes, p.Status.Resources)
		}
		if !benchkit.Pause(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
}
