package playground

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
)

// The workload tags act: a team's namespace, its claim's disk and its
// Service's public IP, tagged from the namespace by a WorkloadTagPolicy.
const (
	workloadNS     = "shop"
	workloadRG     = "MC_demo_aks_" + location
	workloadPolicy = "chargeback"
	chargebackKey  = "chargeback"
)

// workloadIDs are the act's disk and public IP.
type workloadIDs struct{ disk, ip string }

// seedWorkloads creates, as the Azure Disk CSI driver and the Azure cloud
// provider would, a disk for the claim shop/data and a public IP for the
// Service shop/web, and the namespace, claim, volume and Service.
func (pg *playground) seedWorkloads(ctx context.Context) (workloadIDs, error) {
	var ids workloadIDs
	if _, err := pg.sim.CreateResourceGroup(subscriptionID, armsim.ResourceGroup{Name: workloadRG, Location: location}); err != nil {
		return ids, err
	}
	var err error
	if ids.disk, err = pg.sim.CreateResource(subscriptionID, workloadRG, armsim.Resource{Type: armsim.TypeDisk, Name: "pvc-3f1c",
		Tags: map[string]string{"k8s-azure-created-by": "kubernetes-azure-dd", "kubernetes.io-created-for-pvc-name": "data"}}); err != nil {
		return ids, err
	}
	if ids.ip, err = pg.sim.CreateResource(subscriptionID, workloadRG, armsim.Resource{Type: armsim.TypePublicIP, Name: "kubernetes-a8e2",
		Tags: map[string]string{"k8s-azure-service": workloadNS + "/web", "k8s-azure-cluster-name": "demo"}}); err != nil {
		return ids, err
	}
	size := corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("8Gi")}
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workloadNS, Labels: map[string]string{chargebackKey: "cc-100"}}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: workloadNS, Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwo, Resources: corev1.VolumeResourceRequirements{Requests: size}}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-3f1c"}, Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: rwo,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.azure.com", VolumeHandle: ids.disk}},
			ClaimRef:               &corev1.ObjectReference{Namespace: workloadNS, Name: "data"}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: workloadNS, Name: "web", Labels: map[string]string{"team": "storefront"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443}}}},
	} {
		if err := pg.cp.client.Create(ctx, o); err != nil {
			return ids, err
		}
	}
	return ids, nil
}

// workloadTags creates a policy that tags the disks and public IPs of every
// namespace with the namespace's chargeback label, the namespace, and the
// owner's team label: the claim's disk and the Service's IP get them, the
// creators' tags stay.
func (pg *playground) workloadTags(ids *workloadIDs) Step {
	return Step{
		Name: "workload tags: a namespace's disk and public IP",
		Action: func(ctx context.Context) error {
			var err error
			if *ids, err = pg.seedWorkloads(ctx); err != nil {
				return err
			}
			return pg.cp.client.Create(ctx, &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: workloadPolicy},
				Spec: v1alpha1.WorkloadTagPolicySpec{Provider: v1alpha1.ProviderAzure,
					Resources: []v1alpha1.WorkloadResource{v1alpha1.WorkloadPersistentVolume, v1alpha1.WorkloadService},
					Tags: []v1alpha1.WorkloadTag{{Key: chargebackKey, Value: "${namespace.labels['" + chargebackKey + "']}"},
						{Key: "k8s-namespace", Value: "${namespace}"}, {Key: "team", Value: "${labels['team']}"}}}})
		},
		Check: func(ctx context.Context) (string, error) {
			if err := pg.tagsInclude(ids.disk, map[string]string{chargebackKey: "cc-100", "k8s-namespace": workloadNS,
				"kubernetes.io-created-for-pvc-name": "data"}); err != nil {
				return "", err
			}
			if err := pg.tagsInclude(ids.ip, map[string]string{chargebackKey: "cc-100", "team": "storefront",
				"k8s-azure-service": workloadNS + "/web"}); err != nil {
				return "", err
			}
			return fmt.Sprintf("WorkloadTagPolicy %s → disk of claim %s/data and public IP of Service %s/web carry %s=cc-100 from their namespace (the IP team=storefront from its Service); the creators' tags stay",
				workloadPolicy, workloadNS, workloadNS, chargebackKey), nil
		},
	}
}

// workloadRetag changes the namespace's chargeback label: its disk and
// public IP follow.
func (pg *playground) workloadRetag(ids *workloadIDs) Step {
	return Step{
		Name: "workload tags: namespace cost center changed",
		Action: func(ctx context.Context) error {
			ns := &corev1.Namespace{}
			if err := pg.cp.client.Get(ctx, client.ObjectKey{Name: workloadNS}, ns); err != nil {
				return err
			}
			before := ns.DeepCopy()
			ns.Labels[chargebackKey] = "cc-200"
			return pg.cp.client.Patch(ctx, ns, client.MergeFrom(before))
		},
		Check: func(ctx context.Context) (string, error) {
			for _, id := range []string{ids.disk, ids.ip} {
				if err := pg.tagsInclude(id, map[string]string{chargebackKey: "cc-200"}); err != nil {
					return "", err
				}
			}
			return fmt.Sprintf("kubectl label namespace %s %s=cc-200 → its disk and public IP retagged", workloadNS, chargebackKey), nil
		},
	}
}
