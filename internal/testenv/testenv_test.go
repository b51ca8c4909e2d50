package testenv_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tagsyncv1alpha1 "github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv"
)

const smokeNodes = 1000

// TestRealAPIServer proves the tests talk to a real kube-apiserver and etcd:
// the server reports its build, stores 1000 Nodes, lists them, applies label
// patches, and delivers a watch event for an update.
func TestRealAPIServer(t *testing.T) {
	env := testenv.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	disc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	info, err := disc.ServerVersion()
	if err != nil {
		t.Fatalf("asking the server its version: %v", err)
	}
	if info.Major != "1" || info.Minor != "37" {
		t.Fatalf("server version = %s.%s (%s), want the kube-apiserver 1.37 built by make tools", info.Major, info.Minor, info.GitVersion)
	}

	createNodes(ctx, t, env.Client)

	var nodes corev1.NodeList
	if err := env.Client.List(ctx, &nodes, client.MatchingLabels{"smoke": "true"}); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != smokeNodes {
		t.Fatalf("listed %d nodes, want %d", len(nodes.Items), smokeNodes)
	}

	patchLabels(ctx, t, env.Client, nodes.Items)
	var patched corev1.NodeList
	if err := env.Client.List(ctx, &patched, client.MatchingLabels{"azure.tags/env": "smoke"}); err != nil {
		t.Fatal(err)
	}
	if len(patched.Items) != smokeNodes {
		t.Fatalf("%d nodes carry the patched label, want %d", len(patched.Items), smokeNodes)
	}

	watchUpdate(ctx, t, env, patched.Items[0])
}

func TestCRDsInstalled(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	var list tagsyncv1alpha1.NodeTagSyncList
	if err := env.Client.List(ctx, &list); err != nil {
		t.Fatalf("listing NodeTagSyncs: the CRD is not served: %v", err)
	}
	// Other projects' CRDs come only with Options.ExtraCRDDirs.
	if err := env.Client.List(ctx, widgetList()); !meta.IsNoMatchError(err) {
		t.Fatalf("listing Widgets on a plane without extra CRDs: err = %v, want no match for the kind", err)
	}
}

func createNodes(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range smokeNodes {
		g.Go(func() error {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("smoke-%04d", i),
				Labels: map[string]string{"smoke": "true"},
			}}
			return c.Create(ctx, node)
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("creating nodes: %v", err)
	}
}

func patchLabels(ctx context.Context, t *testing.T, c client.Client, nodes []corev1.Node) {
	t.Helper()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"azure.tags/env":"smoke"}}}`))
	for i := range nodes {
		g.Go(func() error { return c.Patch(ctx, &nodes[i], patch) })
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("patching labels: %v", err)
	}
}

func watchUpdate(ctx context.Context, t *testing.T, env *testenv.Env, node corev1.Node) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{
		FieldSelector:   "metadata.name=" + node.Name,
		ResourceVersion: node.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	patch := []byte(`{"metadata":{"labels":{"azure.tags/env":"watched"}}}`)
	if _, err := cs.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed before the update arrived")
			}
			if n, isNode := ev.Object.(*corev1.Node); isNode && ev.Type == watch.Modified && n.Labels["azure.tags/env"] == "watched" {
				return
			}
		case <-ctx.Done():
			t.Fatal("no watch event for the label update before the deadline")
		}
	}
}
