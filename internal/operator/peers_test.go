package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
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

// Deliveries that flow read the Lease and the leader's Pod at most once
// per maxAge, not once each; a new holder is verified at once.
func TestTheLeaderIsVerifiedOncePerMaxAge(t *testing.T) {
	ctx := context.Background()
	const ns = "tagsync-system"
	holder := "tagsync-a_0001"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tagsync-leader",
		Annotations: map[string]string{WebhookAddressAnnotation: "10.0.0.7:9443"}}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	pod := func(name, ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{ServiceAccountName: "tagsync"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
	}
	client := fake.NewClientset(lease, pod("tagsync-a", "10.0.0.7"), pod("tagsync-b", "10.0.0.8"))
	lock := &leaderLock{LeaseLock: &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: ns, Name: "tagsync-leader"},
		LockConfig: resourcelock.ResourceLockConfig{Identity: "tagsync-c_0003"}}, leases: client.CoordinationV1().Leases(ns)}
	p := &peers{lock: lock, pods: client.CoreV1().Pods(ns), self: identity{user: "system:serviceaccount:" + ns + ":tagsync"}}
	gets := func(resource string) int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == resource {
				n++
			}
		}
		return n
	}
	for range 50 {
		peer, err := p.Leader(ctx, time.Hour)
		if err != nil || peer.Name != "tagsync-a" {
			t.Fatalf("leader %+v, %v; want tagsync-a", peer, err)
		}
	}
	if l, pods := gets("leases"), gets("pods"); l != 1 || pods != 1 {
		t.Errorf("50 lookups read the Lease %d times and the Pod %d times, want once each", l, pods)
	}
	other := "tagsync-b_0002"
	lease.Spec.HolderIdentity = &other
	lease.Annotations[WebhookAddressAnnotation] = "10.0.0.8:9443"
	if _, err := client.CoordinationV1().Leases(ns).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if peer, err := p.Leader(ctx, 0); err != nil || peer.Name != "tagsync-b" {
		t.Fatalf("after the Lease moved: %+v, %v; want tagsync-b", peer, err)
	}
}
