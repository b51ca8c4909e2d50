package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/operator"
)

// replicaPod creates the Pod object of a replica run as a process, with
// its peer token (testenv.Env.ReplicaPod), deleted after the test, and
// returns the token file.
func replicaPod(ctx context.Context, t testing.TB, ns, name, sa string) string {
	t.Helper()
	ensureNamespace(ctx, t, ns)
	file, err := kube.ReplicaPod(ctx, t.TempDir(), ns, name, sa, operator.PeerAudience)
	must(t, err)
	t.Cleanup(func() {
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name = ns, name
		_ = client.IgnoreNotFound(kube.Client.Delete(context.Background(), pod))
	})
	return file
}

// projectedToken is the directory of a rendered Pod's projected
// serviceAccountToken volume, written as the kubelet would for a Pod
// object named pod (replicaPod); "" when the volume projects none.
func projectedToken(ctx context.Context, t testing.TB, v corev1.Volume, ns, pod, sa string) string {
	t.Helper()
	if v.Projected == nil {
		return ""
	}
	for _, src := range v.Projected.Sources {
		if tok := src.ServiceAccountToken; tok != nil {
			if tok.Audience != operator.PeerAudience {
				t.Fatalf("volume %s projects a token for %q, want %q", v.Name, tok.Audience, operator.PeerAudience)
			}
			data, err := os.ReadFile(replicaPod(ctx, t, ns, pod, sa))
			must(t, err)
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, tok.Path), data, 0o400))
			return dir
		}
	}
	return ""
}
