package build_test

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestBuildersMakeTheLiterals: each builder makes exactly the object the
// literal it replaces in a test spells out, no field more.
func TestBuildersMakeTheLiterals(t *testing.T) {
	labels := map[string]string{"pool": "a"}
	machine := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", UID: "m-uid"}}
	m3m := &unstructured.Unstructured{}
	m3m.SetGroupVersionKind(build.Metal3MachineGVK)
	m3m.SetName("h1-m")
	m3m.SetAnnotations(map[string]string{"metal3.io/BareMetalHost": "ns/h1"})
	m3m.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: "m", UID: "m-uid", Controller: ptr.To(true)}})
	host := &unstructured.Unstructured{}
	host.SetGroupVersionKind(build.BareMetalHostGVK)
	host.SetName("h1")
	host.Object["spec"] = map[string]any{"consumerRef": map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3Machine", "name": "h1-m", "namespace": "ns"}}

	spec := map[string]any{"platformSpec": map[string]any{"type": "Azure"}}
	infra := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	infra.SetGroupVersionKind(build.InfrastructureGVK)
	infra.SetName("cluster")

	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"a bare Node", build.Node("n1"), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}},
		{"a Node with no taints", build.Node("n1", build.Labels(nil), build.Taints()), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}},
		{"a Node", build.Node("n1", build.ProviderID("azure:///x"), build.Labels(labels), build.Annotation("a", "b"),
			build.Taints(build.NoSchedule("k", "v"), build.NoExecute("e", ""))),
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels, Annotations: map[string]string{"a": "b"}},
				Spec: corev1.NodeSpec{ProviderID: "azure:///x", Taints: []corev1.Taint{
					{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}, {Key: "e", Effect: corev1.TaintEffectNoExecute}}}}},
		{"a NodeTagSync", build.NodeTagSync("nts", build.UID("u1"), build.Generation(1), build.Provider(v1alpha1.ProviderAWS),
			build.NodeSelector(labels), build.LabelPrefix(""), build.SyncTaints(), build.Suspend(),
			build.DeletionPolicy(v1alpha1.DeletionPolicyRetain), build.ResyncInterval(time.Minute)),
			&v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: "nts", UID: "u1", Generation: 1}, Spec: v1alpha1.NodeTagSyncSpec{
				Provider: v1alpha1.ProviderAWS, NodeSelector: &metav1.LabelSelector{MatchLabels: labels}, LabelPrefix: ptr.To(""),
				SyncTaints: true, Suspend: true, DeletionPolicy: v1alpha1.DeletionPolicyRetain, ResyncInterval: &metav1.Duration{Duration: time.Minute}}}},
		{"a CloudMetadata", build.CloudMetadata("cm", build.Namespace("ns"), build.Classifiers(labels), build.AzureRef("az"), build.AWSRef("aws"),
			build.Limit(v1alpha1.LimitStrict)),
			&v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Spec: v1alpha1.CloudMetadataSpec{
				Classifiers: labels, ControllerConfig: v1alpha1.ControllerConfig{Limit: v1alpha1.LimitStrict},
				CloudProvider: v1alpha1.CloudProviderRefs{AzureRef: &v1alpha1.LocalObjectRef{Name: "az"}, AWSRef: &v1alpha1.LocalObjectRef{Name: "aws"}}}}},
		{"an AzureMetadata", build.AzureMetadata("az", build.Opcode(v1alpha1.OpcodeAdd), build.ResourceTags(labels), build.IgnoreTags(), build.Subscriptions("s")),
			&v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Name: "az"}, Spec: v1alpha1.AzureMetadataSpec{
				Opcode: v1alpha1.OpcodeAdd, ResourceTags: labels, Subscriptions: []string{"s"}}}},
		{"an AWSMetadata", build.AWSMetadata("aws", build.Opcode(v1alpha1.OpcodeUpdate), build.ResourceTags(labels), build.IgnoreTags("owner"), build.Suspend()),
			&v1alpha1.AWSMetadata{ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Spec: v1alpha1.AWSMetadataSpec{
				Opcode: v1alpha1.OpcodeUpdate, ResourceTags: labels, IgnoreTags: []string{"owner"}, Suspend: true}}},
		{"a LabelSyncProfile", build.LabelSyncProfile("p1", build.HostSelector(labels), build.Prefixes("rack.example.com")),
			&v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Spec: v1alpha1.LabelSyncProfileSpec{
				HostSelector: metav1.LabelSelector{MatchLabels: labels}, Prefixes: []string{"rack.example.com"}}}},
		{"a kubeconfig Secret", build.KubeconfigSecret("alpha", []byte("kc")),
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "alpha-kubeconfig", Labels: map[string]string{clusterv1.ClusterNameLabel: "alpha"}},
				Data: map[string][]byte{"value": []byte("kc")}}},
		{"a Machine", build.Machine("h1-m", "alpha", build.InfrastructureRef(build.Metal3MachineGVK, "h1-m")),
			&clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "h1-m", Labels: map[string]string{clusterv1.ClusterNameLabel: "alpha"}},
				Spec: clusterv1.MachineSpec{ClusterName: "alpha", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("bootstrap")},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: build.Metal3MachineGVK.Group, Kind: "Metal3Machine", Name: "h1-m"}}}},
		{"a Metal3Machine", build.Metal3Machine("h1-m", build.HostOf("ns", "h1"), build.MachineOwner(machine)), m3m},
		{"a BareMetalHost", build.BareMetalHost("h1", build.Consumer("ns", "h1-m")), host},
		{"an Infrastructure", build.Infrastructure(build.Field(spec, "spec")), infra},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s:\nbuilt   %#v\nliteral %#v", tc.name, tc.got, tc.want)
		}
	}
}
