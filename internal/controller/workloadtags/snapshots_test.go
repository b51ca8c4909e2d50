package workloadtags_test

import (
	"fmt"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/controller/workloadtags"
	"github.com/tagsync/tagsync/internal/testenv"
)

// snapshot creates a VolumeSnapshot in ns with labels and the
// VolumeSnapshotContent the snapshot controller binds to it for driver, of
// the snapshot of volume; handle, when set, is the snapshot the driver cut
// (status.snapshotHandle). It returns the content.
func (h *harness) snapshot(ns, name string, labels map[string]string, driver, volume, handle string) *snapshotv1.VolumeSnapshotContent {
	h.t.Helper()
	content := &snapshotv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-" + ns + "-" + name},
		Spec: snapshotv1.VolumeSnapshotContentSpec{Driver: driver, DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete,
			VolumeSnapshotRef: snapshotRef(ns, name), Source: snapshotv1.VolumeSnapshotContentSource{VolumeHandle: &volume}}}
	vs := &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{VolumeSnapshotContentName: &content.Name}}}
	if err := h.c.Create(h.ctx, vs); err != nil {
		h.t.Fatal(err)
	}
	if err := h.c.Create(h.ctx, content); err != nil {
		h.t.Fatal(err)
	}
	if handle != "" {
		h.cut(content, handle)
	}
	return content
}

// cut sets a content's snapshot handle, as the CSI snapshotter does once
// the driver has cut the snapshot.
func (h *harness) cut(content *snapshotv1.VolumeSnapshotContent, handle string) {
	h.t.Helper()
	content.Status = &snapshotv1.VolumeSnapshotContentStatus{SnapshotHandle: &handle}
	if err := h.c.Status().Update(h.ctx, content); err != nil {
		h.t.Fatal(err)
	}
}

// objectPolicy tags the resources of kind of the test's namespaces with
// the namespace's cost-center, the object's namespace/name under key, and
// its team label.
func (h *harness) objectPolicy(name string, provider v1alpha1.Provider, kind v1alpha1.WorkloadResource, key string) *v1alpha1.WorkloadTagPolicy {
	h.t.Helper()
	p := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.run + "-" + name},
		Spec: v1alpha1.WorkloadTagPolicySpec{Provider: provider,
			Resources:         []v1alpha1.WorkloadResource{kind},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tagsync-test": h.run}},
			Tags: []v1alpha1.WorkloadTag{tag("cost-center", "${namespace.labels['cost-center']}"),
				tag(key, "${namespace}/${name}"), tag("team", "${labels['team']}")}}}
	if err := h.c.Create(h.ctx, p); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// TestAzureSnapshots: the snapshot behind a VolumeSnapshotContent of the
// Azure Disk CSI driver is tagged for its VolumeSnapshot (its labels, its
// namespace's); a content whose snapshot is not cut yet is pending until
// the snapshotter records its handle; an Azure Files share's snapshot is
// reported as shared, never tagged.
func TestAzureSnapshots(t *testing.T) {
	disks := newAzureDisks(t)
	h := newHarness(t, azureOn(disks.env))
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	disk := disks.create("data", nil)
	snap := func(name string) string {
		id, err := disks.env.Server.CreateResource(sub, disks.rg, armsim.Resource{Type: "Microsoft.Compute/snapshots", Name: name,
			Tags: map[string]string{"k8s-azure-created-by": "kubernetes-azure-dd"}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	nightly := snap("snapshot-nightly")
	h.snapshot(shop, "nightly", map[string]string{"team": "payments"}, "disk.csi.azure.com", disk, nightly)
	later := h.snapshot(shop, "later", nil, "disk.csi.azure.com", disk, "")
	h.snapshot(shop, "files", nil, "file.csi.azure.com", "rg#acct#share", "rg#acct#share#snap")

	p := h.objectPolicy("snap", v1alpha1.ProviderAzure, v1alpha1.WorkloadVolumeSnapshot, "k8s-snapshot")
	got := h.waitReady(p.Name, metav1.ConditionFalse, workloadtags.ReasonPartiallyTagged)
	if s := got.Status; s.Resources != 1 || s.InSync != 1 || s.Pending != 1 || s.Shared != 1 {
		t.Errorf("status %+v, want 1 snapshot in sync, 1 pending and the Azure Files share's snapshot shared", s)
	}
	want := map[string]string{"k8s-azure-created-by": "kubernetes-azure-dd", "cost-center": "cc-1", "k8s-snapshot": shop + "/nightly", "team": "payments"}
	if g := disks.tags(nightly); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("%s carries %v, want %v", nightly, g, want)
	}
	if g := disks.tags(disk); g["k8s-snapshot"] != "" || g["cost-center"] != "" {
		t.Errorf("the snapshotted disk was tagged by a snapshot policy: %v", g)
	}

	id := snap("snapshot-later")
	h.cut(later, id)
	disks.waitTag(id, "k8s-snapshot", shop+"/later")
	h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)
}

// TestAWSSnapshots: the EBS snapshot behind a VolumeSnapshotContent of
// the EBS CSI driver is tagged for its VolumeSnapshot, read with
// DescribeSnapshots and written with CreateTags.
func TestAWSSnapshots(t *testing.T) {
	moto := testenv.StartMoto(t)
	h := newHarness(t, func(*harness) cloud.Provider { return awstest.Provider(t, moto) })
	ec2c := ec2.NewFromConfig(moto.Config)
	shop := h.namespace("shop", map[string]string{"cost-center": "cc-1"})
	vol := createVolume(t, ec2c, "pv-0")
	out, err := ec2c.CreateSnapshot(t.Context(), &ec2.CreateSnapshotInput{VolumeId: sdkaws.String(vol),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSnapshot,
			Tags: []ec2types.Tag{{Key: sdkaws.String("CSIVolumeSnapshotName"), Value: sdkaws.String("snapshot-nightly")}}}}})
	if err != nil {
		t.Fatal(err)
	}
	snap := sdkaws.ToString(out.SnapshotId)
	h.snapshot(shop, "nightly", map[string]string{"team": "payments"}, "ebs.csi.aws.com", vol, snap)

	p := h.objectPolicy("snap", v1alpha1.ProviderAWS, v1alpha1.WorkloadVolumeSnapshot, "k8s-snapshot")
	h.waitReady(p.Name, metav1.ConditionTrue, workloadtags.ReasonTagged)
	want := map[string]string{"CSIVolumeSnapshotName": "snapshot-nightly", "cost-center": "cc-1", "k8s-snapshot": shop + "/nightly", "team": "payments"}
	if g := awstest.Tags(t, moto, snap); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("%s carries %v, want %v", snap, g, want)
	}
	if g := awstest.Tags(t, moto, vol); g["k8s-snapshot"] != "" {
		t.Errorf("the snapshotted volume was tagged by a snapshot policy: %v", g)
	}
}

// snapshotRef refers to a VolumeSnapshot.
func snapshotRef(ns, name string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: snapshotv1.SchemeGroupVersion.String(), Kind: "VolumeSnapshot", Namespace: ns, Name: name}
}
