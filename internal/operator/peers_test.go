package operator

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A follower hands deliveries only to the Lease holder's Pod, running
// under its own service account, at one of the Pod's IPs.
func TestTheLeaderIsTrustedOnlyAtItsOwnPodsAddress(t *testing.T) {
	p := &peers{self: identity{user: "system:serviceaccount:tagsync-system:tagsync", pod: "tagsync-b"}}
	running := func(change func(*corev1.Pod)) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tagsync-a"}, Spec: corev1.PodSpec{ServiceAccountName: "tagsync"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7", PodIPs: []corev1.PodIP{{IP: "10.0.0.7"}, {IP: "fd00::7"}}}}
		change(pod)
		return pod
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		addr   string
		refuse string
	}{
		{"its IP", running(func(*corev1.Pod) {}), "10.0.0.7:9443", ""},
		{"its second IP", running(func(*corev1.Pod) {}), "[fd00::7]:9443", ""},
		{"another IP (a rewritten Lease)", running(func(*corev1.Pod) {}), "10.0.0.99:9443", "not an IP of the leader's Pod"},
		{"a Pod being deleted (its IP may be reused)", running(func(p *corev1.Pod) { p.DeletionTimestamp = &now }), "10.0.0.7:9443", "being deleted"},
		{"a failed Pod (its IP may be reused)", running(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), "10.0.0.7:9443", "not Running"},
		{"a Pod of another service account", running(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }), "10.0.0.7:9443", "runs as"},
		{"no port", running(func(*corev1.Pod) {}), "10.0.0.7", "advertised address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.trusted(tc.pod, tc.addr)
			switch {
			case tc.refuse == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse)):
				t.Errorf("got %v, want a refusal saying %q", err, tc.refuse)
			}
		})
	}
}
