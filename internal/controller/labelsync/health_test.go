package labelsync_test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestClusterHealth checks how workload clusters that cannot be reached
// are noticed, explained, retried and forgotten, against two real control
// planes. The cases run one after the other: the unreachable_clusters gauge
// is process-wide, and one case reads it.
func TestClusterHealth(t *testing.T) {
	p := startPlanes(t)
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *planes)
	}{
		{"SecretDeletedThenRecreated", testSecretDeleted},
		{"SecretRotated", testSecretRotated},
		{"CausesToldApart", testCauses},
		{"DeletedClusterForgotten", testDeletedClusterForgotten},
		{"PausedMetal3Cluster", testPausedMetal3Cluster},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, p) })
	}
}

// unreachableBecause is a waitStatus check: the host waits for its
// cluster, whose problem message gives cause.
func unreachableBecause(host string, cause labelsync.UnreachableCause) func(v1alpha1.LabelSyncProfileStatus) string {
	return func(s v1alpha1.LabelSyncProfileStatus) string {
		for _, pr := range s.Problems {
			if pr.Host == host && pr.Reason == labelsync.ReasonClusterUnreachable && strings.Contains(pr.Message, string(cause)) {
				return ""
			}
		}
		return fmt.Sprintf("no ClusterUnreachable problem of host %s saying %q: problems %+v", host, cause, s.Problems)
	}
}

// passUntil asks for passes over the profile until its status satisfies
// ok: what the controller learns only when a pass reads it (a Secret) is
// then noticed without waiting for the resync.
func (h *harness) passUntil(name string, ok func(v1alpha1.LabelSyncProfileStatus) string) *v1alpha1.LabelSyncProfile {
	h.t.Helper()
	var prof *v1alpha1.LabelSyncProfile
	testenv.Eventually(h.t, waitFor, "status of LabelSyncProfile "+name, func() string {
		prof = h.pass(name)
		return ok(prof.Status)
	})
	return prof
}

// kubeconfigSecret is a cluster's <cluster>-kubeconfig Secret.
func (h *harness) kubeconfigSecret(cluster string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: cluster + "-kubeconfig"}}
}

func testSecretDeleted(t *testing.T, p *planes) {
	h := newHarness(t, p)
	b, node := h.syncedHost(p)

	// The Secret goes: the cluster is unreachable, and says why.
	if err := h.c.Delete(h.ctx, h.kubeconfigSecret("alpha")); err != nil {
		t.Fatal(err)
	}
	h.passUntil("p1", unreachableBecause("h1", labelsync.CauseSecretMissing))
	// The old connection is not used any more.
	h.update(h.c, b, func() { b.Labels["rack.example.com/rack"] = "r2" })
	prof := h.pass("p1")
	if err := unreachableBecause("h1", labelsync.CauseSecretMissing)(prof.Status); err != "" {
		t.Fatal(err)
	}
	if got := h.labels(p.workloadC, node)["rack.example.com/rack"]; got != "r1" {
		t.Fatalf("the Node was written through the connection of a deleted Secret: rack label %q", got)
	}

	// The Secret comes back: the cluster is connected again and synced.
	s := h.kubeconfigSecret("alpha")
	s.Namespace = ""
	s.Labels = map[string]string{clusterv1.ClusterNameLabel: "alpha"}
	s.Data = map[string][]byte{"value": p.workloadKC}
	h.create(s)
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r2"})
	h.waitStatus("p1", ready(metav1.ConditionTrue))
}

func testSecretRotated(t *testing.T, p *planes) {
	h := newHarness(t, p)
	// The cluster is first reached through a proxy; its Secret is then
	// rotated to reach the API server directly, and the proxy goes away.
	px := startProxy(t, hostPort(t, p.workload.Config.Host))
	h.cluster("alpha", kubeconfigVia(t, p.workloadKC, px.URL()), nil)
	node := h.node(p.workloadC, "n1", nil)
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	h.machine(b, "alpha", node)
	h.profile("p1", "rack.example.com")
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r1"})

	s := h.kubeconfigSecret("alpha")
	h.update(h.c, s, func() { s.Data["value"] = p.workloadKC })
	px.Stop()
	h.update(h.c, b, func() { b.Labels["rack.example.com/rack"] = "r2" })
	testenv.Eventually(t, waitFor, "the host's change through the rotated kubeconfig", func() string {
		h.pass("p1")
		if got := h.labels(p.workloadC, node)["rack.example.com/rack"]; got != "r2" {
			return fmt.Sprintf("rack label %q", got)
		}
		return ""
	})
}

// withToken returns kubeconfig authenticating with token instead of its
// own credentials.
func withToken(t *testing.T, kubeconfig []byte, token string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.ClientCertificate, a.ClientCertificateData, a.ClientKey, a.ClientKeyData = "", nil, "", nil
		a.Username, a.Password, a.TokenFile, a.Token = "", "", "", token
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// deadServer is the URL of a loopback port nothing listens on.
func deadServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "https://" + addr
}

func testCauses(t *testing.T, p *planes) {
	h := newHarness(t, p)
	h.cluster("badtoken", withToken(t, p.workloadKC, "not-a-token-of-this-cluster"), nil)
	h.cluster("deadport", kubeconfigVia(t, p.workloadKC, deadServer(t)), nil)
	h.cluster("garbled", []byte("this is not a kubeconfig"), nil)
	for _, c := range []string{"badtoken", "deadport", "garbled"} {
		b := h.host("h-"+c, map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
		h.machine(b, c, h.ns+"-"+c)
	}
	h.profile("p1", "rack.example.com")
	h.waitStatus("p1", func(s v1alpha1.LabelSyncProfileStatus) string {
		for host, cause := range map[string]labelsync.UnreachableCause{
			"h-badtoken": labelsync.CauseAuthRefused,
			"h-deadport": labelsync.CauseConnectionRefused,
			"h-garbled":  labelsync.CauseKubeconfigMalformed,
		} {
			if msg := unreachableBecause(host, cause)(s); msg != "" {
				return msg
			}
		}
		return ""
	})
}

func testDeletedClusterForgotten(t *testing.T, p *planes) {
	h := newHarness(t, p)
	cl := h.cluster("gone", kubeconfigVia(t, p.workloadKC, deadServer(t)), nil)
	b := h.host("h1", map[string]string{"sync": "p1", "rack.example.com/rack": "r1"})
	m := h.machine(b, "gone", h.ns+"-n1")
	h.profile("p1", "rack.example.com")
	h.waitStatus("p1", waiting(v1alpha1.WaitClusterUnreachable, "h1"))
	gauge := func(want float64) func() string {
		return func() string {
			if got := testenv.Counter(t, "tagsync_labelsync_unreachable_clusters", nil); got != want {
				return fmt.Sprintf("unreachable_clusters %v, want %v", got, want)
			}
			return ""
		}
	}
	testenv.Eventually(t, waitFor, "the unreachable cluster counted", gauge(1))

	// The cluster is deleted, its Machine first (as Cluster API does).
	for _, o := range []client.Object{m, cl} {
		if err := h.c.Delete(h.ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	h.waitStatus("p1", waiting(v1alpha1.WaitNoMachine, "h1"))
	testenv.Eventually(t, waitFor, "the deleted cluster forgotten", gauge(0))
}

func testPausedMetal3Cluster(t *testing.T, p *planes) {
	h := newHarness(t, p)
	b, node := h.syncedHost(p)

	// CAPM3 skips a Metal3Cluster annotated cluster.x-k8s.io/paused: so
	// does label sync.
	m3c := metav1PartialObject(metal3.Metal3ClusterGVK.GroupVersion().String(), "Metal3Cluster", h.ns, "alpha")
	h.setAnnotation(m3c, clusterv1.PausedAnnotation, "")
	h.update(h.c, b, func() { b.Labels["rack.example.com/rack"] = "r2" })
	prof := h.pass("p1")
	if prof.Status.HostsPaused != 1 {
		t.Fatalf("status %+v, want the host of the paused Metal3Cluster paused", prof.Status)
	}
	if got := h.labels(p.workloadC, node)["rack.example.com/rack"]; got != "r1" {
		t.Fatalf("a paused Metal3Cluster's Node was written: rack label %q", got)
	}
	// Unpaused: the change lands, without waiting for the resync.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, clusterv1.PausedAnnotation)
	if err := h.c.Patch(h.ctx, m3c, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	h.waitLabels(p.workloadC, node, map[string]string{"rack.example.com/rack": "r2"})
}
