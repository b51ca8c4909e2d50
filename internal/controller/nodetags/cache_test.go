package nodetags

import (
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTrimNodeKeepsWhatTheControllerReadsAndSharesStrings(t *testing.T) {
	mk := func(name string) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7",
				Labels:        map[string]string{string([]byte("agentpool")): string([]byte("pool1"))},
				Annotations:   map[string]string{BaseAnnotation: `{"env":"prod"}`, "node.alpha.kubernetes.io/ttl": "0"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
			Spec: corev1.NodeSpec{ProviderID: "azure:///x", PodCIDR: "10.0.0.0/24",
				Taints: []corev1.Taint{{Key: PendingTaintKey, Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"img"}}}},
		}
	}
	a, _ := TrimNode(mk("a"))
	b, _ := TrimNode(mk("b"))
	na, nb := a.(*corev1.Node), b.(*corev1.Node)
	if na.Spec.ProviderID != "azure:///x" || !hasPendingTaint(na) || na.Labels["agentpool"] != "pool1" ||
		na.Annotations[BaseAnnotation] != `{"env":"prod"}` || na.ResourceVersion != "7" {
		t.Fatalf("trimNode dropped something the controller reads: %+v", na)
	}
	if na.ManagedFields != nil || len(na.Status.Images) != 0 || na.Spec.PodCIDR != "" || len(na.Annotations) != 1 {
		t.Fatalf("trimNode kept what the controller never reads: %+v", na)
	}
	if unsafe.StringData(na.Labels["agentpool"]) != unsafe.StringData(nb.Labels["agentpool"]) {
		t.Fatal("equal label values of two Nodes are not shared")
	}
}
