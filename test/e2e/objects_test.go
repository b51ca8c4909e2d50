package e2e_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/internal/controller/infratags"
	"github.com/tagsync/tagsync/internal/testenv"
)

// decodeObjects splits a multi-document YAML stream into objects, skipping
// empty documents.
func decodeObjects(b []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// readObjects decodes a YAML file of the repository.
func readObjects(t testing.TB, rel string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kube.RootDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(b)
	if err != nil {
		t.Fatalf("decoding %s: %v", rel, err)
	}
	return objs
}

// installLabelSyncCRDs installs Cluster API's Cluster and Machine CRDs and
// the Metal3 ones, waits until they are served, and removes them when the
// test ends.
func installLabelSyncCRDs(t testing.TB) {
	t.Helper()
	dir, err := testenv.ModuleDir("sigs.k8s.io/cluster-api")
	must(t, err)
	bases := filepath.Join(dir, "core", "config", "crd", "bases")
	files := []string{filepath.Join(bases, "cluster.x-k8s.io_clusters.yaml"), filepath.Join(bases, "cluster.x-k8s.io_machines.yaml")}
	metal3CRDs, err := filepath.Glob(filepath.Join(kube.RootDir, "test", "crds", "metal3", "*.yaml"))
	must(t, err)
	var crds []*unstructured.Unstructured
	for _, file := range append(files, metal3CRDs...) {
		b, err := os.ReadFile(file)
		must(t, err)
		objs, err := decodeObjects(b)
		must(t, err)
		crds = append(crds, objs...)
	}
	installCRDs(t, crds, clusterv1.GroupVersion.WithKind("ClusterList"), clusterv1.GroupVersion.WithKind("MachineList"),
		metal3.HostGVK.GroupVersion().WithKind("BareMetalHostList"),
		metal3.Metal3MachineGVK.GroupVersion().WithKind("Metal3MachineList"),
		metal3.Metal3ClusterGVK.GroupVersion().WithKind("Metal3ClusterList"))
}

// labelSyncClient is a cluster admin client that knows Cluster API's and
// Metal3's types.
func labelSyncClient(t testing.TB) client.Client {
	t.Helper()
	s := testenv.Scheme()
	must(t, clusterv1.AddToScheme(s))
	must(t, metal3.AddToScheme(s))
	c, err := client.New(kube.Config, client.Options{Scheme: s})
	must(t, err)
	return c
}

// installInfrastructureCRD installs OpenShift's Infrastructure CRD
// (test/crds/openshift-seed), waits until it is served, and removes it when
// the test ends.
func installInfrastructureCRD(t testing.TB) {
	t.Helper()
	installCRDs(t, readObjects(t, "test/crds/openshift-seed/infrastructures.config.openshift.io.yaml"),
		infratags.InfrastructureGVK.GroupVersion().WithKind("InfrastructureList"))
}
