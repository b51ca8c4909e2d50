package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ReplicaPod stands in for a replica's Pod and its kubelet where replicas
// run as processes on this machine: it creates the Pod object (in
// namespace ns, which must exist, under ServiceAccount sa, created if
// missing, Running at 127.0.0.1) and writes into dir the token the kubelet
// would project into it for audience, bound to the Pod. It returns the
// token file.
func (e *Env) ReplicaPod(ctx context.Context, dir, ns, name, sa, audience string) (string, error) {
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}
	if err := e.Client.Create(ctx, account); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating ServiceAccount %s/%s: %w", ns, sa, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{ServiceAccountName: sa, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "manager", Image: "tagsync:test"}}},
	}
	if err := e.Client.Create(ctx, pod); err != nil {
		return "", fmt.Errorf("creating Pod %s/%s: %w", ns, name, err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}}}
	if err := e.Client.Status().Update(ctx, pod); err != nil {
		return "", fmt.Errorf("marking Pod %s/%s running: %w", ns, name, err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](3600),
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: name, UID: pod.UID}}}
	if err := e.Client.SubResource("token").Create(ctx, account, req); err != nil {
		return "", fmt.Errorf("requesting the token of Pod %s/%s: %w", ns, name, err)
	}
	file := filepath.Join(dir, name+".token")
	return file, os.WriteFile(file, []byte(req.Status.Token), 0o400)
}
