package workloadtags

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// rules is a small cloud: 5 tags, names compared without case.
var rules = tags.Rules{MaxTags: 5, MaxNameLen: 64, MaxValueLen: 64, CaseInsensitive: true}

func mustConfig(t *testing.T, name string, sel map[string]string, ts ...v1alpha1.WorkloadTag) config {
	t.Helper()
	p := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.WorkloadTagPolicySpec{Tags: ts}}
	if sel != nil {
		p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: sel}
	}
	c, err := newConfig(p, rules, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wl(id, ns, claim string, nsLabels map[string]string) workload {
	return workload{source: "pv-" + claim, ref: ref{id: id},
		w: tags.Workload{Kind: "PersistentVolumeClaim", Namespace: ns, Name: claim, NamespaceLabels: nsLabels}}
}

// TestPlan: what each resource lacks is set, nothing is deleted (a key the
// policy does not ask for stays), a missing resource is pending and an
// unread one unread, a shared one is never planned, a rival's different
// value leaves the key out (same value: no contest, case ignored where the
// cloud ignores it), and the tag limit leaves adds out.
func TestPlan(t *testing.T) {
	cfg := mustConfig(t, "costs", nil,
		v1alpha1.WorkloadTag{Key: "cost-center", Value: "${namespace.labels['cc']}"},
		v1alpha1.WorkloadTag{Key: "k8s-namespace", Value: "${namespace}"})
	rival := mustConfig(t, "rival", map[string]string{"team": "a"},
		v1alpha1.WorkloadTag{Key: "K8S-Namespace", Value: "other"},
		v1alpha1.WorkloadTag{Key: "cost-center", Value: "${namespace.labels['cc']}"})
	labels := map[string]string{"cc": "cc-1"}
	ws := []workload{
		wl("a", "shop", "data", labels),
		wl("b", "shop", "logs", labels),
		wl("c", "web", "db", map[string]string{"cc": "cc-2", "team": "a"}),
		wl("missing", "shop", "new", labels),
		wl("unread", "shop", "x", labels),
		wl("full", "shop", "y", labels),
		{source: "pv-share", ref: ref{shared: "efs"}},
	}
	rd := cloud.Reading{Resources: []cloud.Classified{
		{ID: "A", Tags: tags.Set{"cost-center": "cc-1", "k8s-namespace": "shop", "old": "kept"}, Rules: rules},
		{ID: "b", Tags: tags.Set{"cost-center": "cc-0"}, Rules: rules},
		{ID: "c", Tags: tags.Set{}, Rules: rules},
		{ID: "full", Tags: tags.Set{"1": "", "2": "", "3": "", "4": ""}, Rules: rules},
	}, Missing: []string{"missing"}, Unread: []string{"unread"}}
	plans := plan(cfg, []config{rival}, ws, rd)
	type got struct {
		state     resourceState
		set       tags.Set
		contested map[string]string
		skipped   int
	}
	want := []got{
		{stateFound, nil, nil, 0},
		{stateFound, tags.Set{"cost-center": "cc-1", "k8s-namespace": "shop"}, nil, 0},
		{stateFound, tags.Set{"cost-center": "cc-2"}, map[string]string{"k8s-namespace": "rival"}, 0},
		{statePending, nil, nil, 0},
		{stateUnread, nil, nil, 0},
		{stateFound, tags.Set{"cost-center": "cc-1"}, nil, 1},
		{stateShared, nil, nil, 0},
	}
	for i, rp := range plans {
		g := got{rp.state, rp.patch.Set, rp.contested, len(rp.skipped)}
		if !reflect.DeepEqual(g, want[i]) {
			t.Errorf("%s: %+v, want %+v", rp.source, g, want[i])
		}
		if len(rp.patch.Delete) > 0 {
			t.Errorf("%s: a deletion was planned: %v", rp.source, rp.patch.Delete)
		}
	}
	if !plans[0].inSync() || plans[1].inSync() || plans[5].inSync() {
		t.Error("inSync is wrong")
	}
	ws2 := writes(plans)
	if len(ws2) != 3 {
		t.Fatalf("%d writes, want 3: %+v", len(ws2), ws2)
	}
}

// TestNewConfigRefuses: every problem of a spec is named at once.
func TestNewConfigRefuses(t *testing.T) {
	p := &v1alpha1.WorkloadTagPolicy{Spec: v1alpha1.WorkloadTagPolicySpec{Tags: []v1alpha1.WorkloadTag{
		{Key: "Env", Value: "a"}, {Key: "env", Value: "b"}, {Key: "bad/name", Value: "x"},
		{Key: "created-by", Value: "me"}, {Key: "t", Value: "${pod}"}}}}
	r := rules
	r.ForbiddenNameChars = "/"
	_, err := newConfig(p, r, []tags.PlatformKey{{Pattern: "created-*", Owner: "the CSI driver"}})
	for _, says := range []string{`"env": the cloud takes it for the same tag as "Env"`, `"bad/name"`, "creator (the CSI driver)", `"t": invalid value template`} {
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("error %v does not say %q", err, says)
		}
	}
}

// TestPresets: a preset expands to its cost tool's keys, a key in tags
// replaces the preset's, and the cloud's rules apply to the expanded keys
// (Azure refuses the / of kubernetes_label_app.kubernetes.io/name).
func TestPresets(t *testing.T) {
	p := &v1alpha1.WorkloadTagPolicy{Spec: v1alpha1.WorkloadTagPolicySpec{
		Presets: []v1alpha1.WorkloadTagPreset{
			{Name: v1alpha1.PresetKubecost, Cluster: "prod-1", Labels: []string{"team"}},
			{Name: v1alpha1.PresetAWSSplitCostAllocation, Labels: []string{"app"}}},
		Tags: []v1alpha1.WorkloadTag{{Key: "kubernetes_namespace", Value: "ns-${namespace}"}}}}
	r := rules
	r.MaxTags = 50
	c, err := newConfig(p, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := c.want(tags.Workload{Namespace: "shop", Name: "data", Labels: map[string]string{"team": "pay", "app": "web"}})
	want := tags.Set{"kubernetes_cluster": "prod-1", "kubernetes_namespace": "ns-shop", "kubernetes_label_team": "pay", "app": "web"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("want = %v, want %v", got, want)
	}
	p.Spec.Presets[0].Labels = []string{"app.kubernetes.io/name"}
	r.ForbiddenNameChars = "/"
	if _, err := newConfig(p, r, nil); err == nil || !strings.Contains(err.Error(), `"kubernetes_label_app.kubernetes.io/name"`) {
		t.Errorf("a preset key the cloud refuses was not named: %v", err)
	}
	many := make([]string, 20)
	for i := range many {
		many[i] = fmt.Sprintf("l%d", i)
	}
	p.Spec.Presets = []v1alpha1.WorkloadTagPreset{{Name: v1alpha1.PresetKubecost, Labels: many}}
	if _, err := newConfig(p, r, nil); err == nil || !strings.Contains(err.Error(), "21 keys") {
		t.Errorf("21 keys with the preset's were not refused: %v", err)
	}
}

// TestVolumeOf maps volume sources to resources per cloud.
func TestVolumeOf(t *testing.T) {
	disk := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/d"
	for _, tc := range []struct {
		src      corev1.PersistentVolumeSource
		provider v1alpha1.Provider
		want     ref
		ok       bool
	}{
		{corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.azure.com", VolumeHandle: disk}}, v1alpha1.ProviderAzure, ref{id: disk}, true},
		{corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.azure.com", VolumeHandle: disk}}, v1alpha1.ProviderAWS, ref{}, false},
		{corev1.PersistentVolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DataDiskURI: disk}}, v1alpha1.ProviderAzure, ref{id: disk}, true},
		{corev1.PersistentVolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DataDiskURI: "https://acct.blob.core.windows.net/vhds/d.vhd"}}, v1alpha1.ProviderAzure, ref{id: "https://acct.blob.core.windows.net/vhds/d.vhd"}, false},
		{corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "file.csi.azure.com", VolumeHandle: "rg#acct#share"}}, v1alpha1.ProviderAzure, ref{shared: "file.csi.azure.com share rg#acct#share"}, true},
		{corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-1"}}, v1alpha1.ProviderAWS, ref{id: "vol-1"}, true},
		{corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "local-ebs://dev/xvdb"}}, v1alpha1.ProviderAWS, ref{id: "local-ebs://dev/xvdb"}, false},
		{corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://us-east-1a/vol-2"}}, v1alpha1.ProviderAWS, ref{id: "vol-2"}, true},
		{corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws:///vol-3"}}, v1alpha1.ProviderAWS, ref{id: "vol-3"}, true},
		{corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "efs.csi.aws.com", VolumeHandle: "efs:fs-1::fsap-2"}}, v1alpha1.ProviderAWS, ref{shared: "efs.csi.aws.com share efs:fs-1::fsap-2"}, true},
		{corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}, v1alpha1.ProviderAWS, ref{}, false},
	} {
		got, ok := volumeOf(&corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: tc.src}}, tc.provider)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%+v on %s: %+v, %v; want %+v, %v", tc.src, tc.provider, got, ok, tc.want, tc.ok)
		}
	}
}

// TestWriteKeyCountsPutBacksOfOneValue: the same value written again is
// counted with the first write; a new value (a template that renders
// another) is counted apart, so relabelling a namespace is never a fight.
func TestWriteKeyCountsPutBacksOfOneValue(t *testing.T) {
	nc := rules.NameCase()
	a, b := writeKey("/X/d", nc, "Cost", "cc-1"), writeKey("/x/D", nc, "cost", "cc-1")
	if a != b {
		t.Errorf("writeKey differs by case where the cloud ignores it: %v, %v", a, b)
	}
	if c := writeKey("/x/d", nc, "cost", "cc-2"); c == a {
		t.Errorf("a new value is counted with the old: %v", c)
	}
}

// TestTrimVolume: the cache keeps of a PersistentVolume what volumeOf and
// the watch read (claim, phase, disk reference), drops the rest, and is
// idempotent; a claim keeps its names, labels and annotations only.
func TestTrimVolume(t *testing.T) {
	disk := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/d0"
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-0", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "disk.csi.azure.com"},
		Finalizers: []string{"kubernetes.io/pv-protection"}},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "shop", Name: "data", UID: "u1", ResourceVersion: "9"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.azure.com", VolumeHandle: disk,
				VolumeAttributes: map[string]string{"csi.storage.k8s.io/pvc/name": "data"}}},
			MountOptions: []string{"noatime"}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound, Message: "bound"}}
	once, _ := TrimVolume(pv)
	twice, _ := TrimVolume(once)
	got := twice.(*corev1.PersistentVolume)
	if got.Name != "pv-0" || got.Spec.ClaimRef.Name != "data" || got.Spec.ClaimRef.Namespace != "shop" || got.Status.Phase != corev1.VolumeBound ||
		got.Spec.CSI.Driver != "disk.csi.azure.com" || got.Spec.CSI.VolumeHandle != disk {
		t.Errorf("trimmed %+v lost what the controller reads", got)
	}
	if got.Annotations != nil || got.Finalizers != nil || got.Spec.CSI.VolumeAttributes != nil || got.Spec.MountOptions != nil || got.Status.Message != "" {
		t.Errorf("trimmed %+v kept what the controller never reads", got)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data", Labels: map[string]string{"team": "a"},
		Annotations: map[string]string{"cost": "x"}}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-0"}}
	c, _ := TrimClaim(pvc)
	if claim := c.(*corev1.PersistentVolumeClaim); claim.Labels["team"] != "a" || claim.Annotations["cost"] != "x" || claim.Spec.VolumeName != "" {
		t.Errorf("trimmed claim %+v, want its labels and annotations only", claim)
	}
}
