package labelsync_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestCRDsInstalledAfterStart starts the controller on a cluster that
// serves neither Metal3 nor Cluster API, then installs their CRDs: label
// sync starts by itself (no restart), the profile leaves CRDsMissing and a
// host's labels reach its Node (the cluster is its own workload cluster).
func TestCRDsInstalledAfterStart(t *testing.T) {
	env := testenv.Start(t)
	c, err := client.New(env.Config, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, &planes{mgmt: env, workload: env, mgmtC: c, workloadC: c, mgmtKube: env.KubeConfig, workloadKC: env.KubeConfig})
	h.profile("racks", "rack.example.com")
	h.waitStatus("racks", func(s v1alpha1.LabelSyncProfileStatus) string {
		if cond := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionReady); cond == nil || cond.Reason != labelsync.ReasonCRDsMissing {
			return fmt.Sprintf("Ready is %+v, want reason %s", cond, labelsync.ReasonCRDsMissing)
		}
		return ""
	})

	var paths []string
	for _, p := range crdDirs(t) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(env.RootDir, p)
		}
		paths = append(paths, p)
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	h.cluster("self", env.KubeConfig, nil)
	b := h.host("h1", map[string]string{"sync": "racks", "rack.example.com/row": "r1"})
	node := h.node(c, "n1", map[string]string{"other.example.com/keep": "yes"})
	h.machine(b, "self", node)

	h.waitLabels(c, node, map[string]string{"rack.example.com/row": "r1", "other.example.com/keep": "yes"})
	p := h.waitStatus("racks", ready(metav1.ConditionTrue))
	if p.Status.HostsMatched != 1 || p.Status.NodesInSync != 1 {
		t.Fatalf("status %+v, want 1 host matched and in sync", p.Status)
	}
}
