package e2e_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/testenv"
)

// previousChartCommit is a commit whose chart still shipped its CRDs in
// crds/, which Helm installs once and never upgrades: the chart a cluster
// upgrades from.
const previousChartCommit = "f039d6970e039fa257f1b402ae8078285acf4768"

// tagsyncCRDs are the names of tagsync's CRDs.
var tagsyncCRDs = []string{"awsmetadata.tagsync.io", "azuremetadata.tagsync.io", "cloudmetadata.tagsync.io",
	"labelsyncprofiles.tagsync.io", "nodetagsyncs.tagsync.io", "workloadtagpolicies.tagsync.io"}

var (
	nodeTagSyncGVK   = schema.GroupVersionKind{Group: "tagsync.io", Version: "v1alpha1", Kind: "NodeTagSync"}
	cloudMetadataGVK = schema.GroupVersionKind{Group: "tagsync.io", Version: "v1alpha1", Kind: "CloudMetadata"}
	crdGVK           = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
)

// TestChartUpgradeTakesOverTheCRDs installs the previous chart (packaged
// from previousChartCommit, its CRDs in crds/, its NodeTagSync part of the
// release) with `helm install` on a control plane of its own that starts
// without tagsync's CRDs, creates a CloudMetadata and gives it and the
// chart's NodeTagSync a status, then runs `helm upgrade --take-ownership` to
// this chart (packaged), as docs/install.md says: the CRDs are now the
// release's (Helm's ownership metadata, helm.sh/resource-policy: keep, in
// the release manifest) and the current ones (the NodeTagSync CRD has
// spec.suspend, and a NodeTagSync keeps it), the NodeTagSync left the
// release without being deleted (the upgrade's keep Job marked it first)
// and was applied by the objects Job, and both objects are the same objects
// with the same status. `helm uninstall` then keeps the CRDs, the
// CloudMetadata and the NodeTagSync.
//
// Then a first install of this chart on a cluster without the CRDs: the
// objects Job applies the NodeTagSync once its CRD is served; an upgrade
// that changes its spec while the new Deployment has not rolled out leaves
// the spec as it was until the rollout, then applies it; with
// crds.keep=false `helm uninstall` deletes the CRDs.
//
// An envtest control plane runs no Pods: chartJobs runs each hook Job's
// container as the real binary, as the Job's ServiceAccount, and marks the
// Deployment rolled out when the test lets it.
func TestChartUpgradeTakesOverTheCRDs(t *testing.T) {
	ctx := context.Background()
	cluster := testenv.StartWith(t, testenv.Options{WithoutTagsyncCRDs: true})
	h := newHelmCLI(t, cluster)
	dir := t.TempDir()
	previous := h.packageChart(t, extractChart(t, previousChartCommit, filepath.Join(dir, "previous")), filepath.Join(dir, "previous-pkg"))
	current := h.packageChart(t, chartDir(), filepath.Join(dir, "current-pkg"))
	const release, ns = "tagsync", "tagsync-system"

	h.run(t, "install", release, previous, "-n", ns, "--create-namespace")
	if crd := getObject(ctx, t, cluster.Client, crdGVK, "", "nodetagsyncs.tagsync.io"); hasSuspend(crd) {
		t.Fatal("the previous chart's NodeTagSync CRD already has spec.suspend: pick an older previousChartCommit")
	}
	nts := getObject(ctx, t, cluster.Client, nodeTagSyncGVK, "", "default")
	cm := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "cluster", "namespace": ns},
		"spec": map[string]any{"classifiers": map[string]any{"kubernetes.io/cluster/upgrade": "owned"},
			"cloudProvider": map[string]any{"azureRef": map[string]any{"name": "azure"}}},
	}}
	cm.SetGroupVersionKind(cloudMetadataGVK)
	must(t, cluster.Client.Create(ctx, cm))
	now := time.Now().UTC().Format(time.RFC3339)
	ready := []any{map[string]any{"type": "Ready", "status": "True", "reason": "Synced", "message": "in sync",
		"lastTransitionTime": now, "observedGeneration": int64(1)}}
	setStatus(ctx, t, cluster.Client, nts, map[string]any{"observedGeneration": int64(1), "syncedNodes": int64(3),
		"unmanagedNodes": int64(1), "conflictCount": int64(0), "errorCount": int64(0), "conditions": ready})
	setStatus(ctx, t, cluster.Client, cm, map[string]any{"observedGeneration": int64(1), "matched": int64(4),
		"inSync": int64(4), "failed": int64(0), "lastSyncTime": now, "conditions": ready})
	before := map[string]*unstructured.Unstructured{
		"NodeTagSync default":   getObject(ctx, t, cluster.Client, nodeTagSyncGVK, "", "default"),
		"CloudMetadata cluster": getObject(ctx, t, cluster.Client, cloudMetadataGVK, ns, "cluster"),
	}

	jobs := runChartJobs(t, cluster)
	h.run(t, "upgrade", release, current, "-n", ns, "--take-ownership")
	if jobs.succeeded("tagsync-objects-keep") != 1 || jobs.succeeded("tagsync-objects-apply") != 1 {
		t.Errorf("the upgrade ran the Jobs %v, want tagsync-objects-keep and tagsync-objects-apply once each", jobs.Runs())
	}
	if v := getObject(ctx, t, cluster.Client, nodeTagSyncGVK, "", "default").GetAnnotations()["tagsync.io/requires-version"]; v == "" {
		t.Error("after the upgrade the NodeTagSync has no tagsync.io/requires-version: the objects Job did not apply it")
	}
	manifest, err := decodeObjects(h.run(t, "get", "manifest", release, "-n", ns))
	must(t, err)
	var inRelease []string
	for _, o := range ofKind(manifest, "CustomResourceDefinition") {
		inRelease = append(inRelease, o.GetName())
	}
	if n := len(ofKind(manifest, "NodeTagSync")); n != 0 {
		t.Errorf("the upgraded release's manifest holds %d NodeTagSyncs, want none (the objects Job applies it)", n)
	}
	if slices.Sort(inRelease); !slices.Equal(inRelease, tagsyncCRDs) {
		t.Errorf("the upgraded release's manifest holds the CRDs %v, want %v", inRelease, tagsyncCRDs)
	}
	for _, name := range tagsyncCRDs {
		checkReleaseCRD(ctx, t, cluster.Client, name, release, ns, true)
	}
	if crd := getObject(ctx, t, cluster.Client, crdGVK, "", "nodetagsyncs.tagsync.io"); !hasSuspend(crd) {
		t.Error("after the upgrade the NodeTagSync CRD has no spec.suspend: the CRDs were not upgraded")
	}
	for key, was := range before {
		kind, name, _ := strings.Cut(key, " ")
		gvk, ns := nodeTagSyncGVK, ""
		if kind == "CloudMetadata" {
			gvk, ns = cloudMetadataGVK, was.GetNamespace()
		}
		now := getObject(ctx, t, cluster.Client, gvk, ns, name)
		if now.GetUID() != was.GetUID() {
			t.Errorf("%s was replaced by the upgrade (uid %s, was %s)", key, now.GetUID(), was.GetUID())
		}
		if !equality.Semantic.DeepEqual(now.Object["status"], was.Object["status"]) {
			t.Errorf("%s's status changed in the upgrade:\nnow %v\nwas %v", key, now.Object["status"], was.Object["status"])
		}
	}
	// The new field is stored, not pruned as the previous CRD would.
	must(t, mergePatch(ctx, cluster.Client, before["NodeTagSync default"].DeepCopy(), `{"spec":{"suspend":true}}`))
	if suspend, _, _ := unstructured.NestedBool(getObject(ctx, t, cluster.Client, nodeTagSyncGVK, "", "default").Object, "spec", "suspend"); !suspend {
		t.Error("spec.suspend set on the NodeTagSync was not kept")
	}

	h.run(t, "uninstall", release, "-n", ns)
	for _, name := range tagsyncCRDs {
		getObject(ctx, t, cluster.Client, crdGVK, "", name)
	}
	getObject(ctx, t, cluster.Client, cloudMetadataGVK, ns, "cluster")
	if left := getObject(ctx, t, cluster.Client, nodeTagSyncGVK, "", "default"); left.GetUID() != before["NodeTagSync default"].GetUID() {
		t.Errorf("helm uninstall replaced the NodeTagSync (uid %s, was %s)", left.GetUID(), before["NodeTagSync default"].GetUID())
	}

	// A first install of this chart, the CRDs gone: from the API server's
	// discovery too, as on a cluster that never had them.
	deleteCRDs(ctx, t, cluster.Client)
	waitGroupGone(t, cluster.Config)
	h.run(t, "install", release, current, "-n", ns)
	nts = getObject(ctx, t, cluster.Client, nodeTagSyncGVK, "", "default")
	if a := nts.GetAnnotations(); a["helm.sh/hook"] != "" || a["tagsync.io/requires-version"] == "" {
		t.Errorf("after a first install the NodeTagSync has annotations %v, want tagsync.io/requires-version and no hook", a)
	}
	for _, name := range tagsyncCRDs {
		checkReleaseCRD(ctx, t, cluster.Client, name, release, ns, true)
	}

	// An upgrade that changes the NodeTagSync's spec and the Deployment's
	// Pods (as a new image does): while the new Deployment has not rolled
	// out, the objects Job waits and the spec is the old one; once it has,
	// the new spec is applied.
	jobs.hold.Store(true)
	upgrade := make(chan error, 1)
	go func() {
		out, err := h.try(t, "upgrade", release, current, "-n", ns, "--set", "crds.keep=false,nodeTagSync.spec.resyncInterval=7m",
			"--set-string", "podAnnotations.rollout=2")
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, out)
		}
		upgrade <- err
	}()
	eventually(t, "the objects Job waiting for the rollout", func() string {
		out, ok := jobs.running("tagsync-objects-apply")
		if !strings.Contains(out, "Deployment "+ns+"/tagsync: waiting for the rollout to start") {
			return fmt.Sprintf("running %v, output %q", ok, out)
		}
		return ""
	})
	if interval, _, _ := unstructured.NestedString(getObject(ctx, t, cluster.Client, nodeTagSyncGVK, "", "default").Object, "spec", "resyncInterval"); interval == "7m" {
		t.Error("the new spec was applied before the Deployment rolled out")
	}
	jobs.hold.Store(false)
	must(t, <-upgrade)
	nts = getObject(ctx, t, cluster.Client, nodeTagSyncGVK, "", "default")
	if interval, _, _ := unstructured.NestedString(nts.Object, "spec", "resyncInterval"); interval != "7m" {
		t.Errorf("after the rollout the NodeTagSync has resyncInterval %q, want 7m", interval)
	}
	for _, name := range tagsyncCRDs {
		checkReleaseCRD(ctx, t, cluster.Client, name, release, ns, false)
	}
	waitCRDsServed(ctx, t, cluster.Client)
	h.run(t, "uninstall", release, "-n", ns)
	eventuallyWithin(t, crdDeletionWait, "helm uninstall with crds.keep=false deletes the CRDs", func() string {
		return crdsLeft(ctx, cluster.Client)
	})
}

// checkReleaseCRD: the CRD carries the release's ownership metadata and,
// with keep, helm.sh/resource-policy: keep (without keep, none).
func checkReleaseCRD(ctx context.Context, t *testing.T, c client.Client, name, release, namespace string, keep bool) {
	t.Helper()
	crd := getObject(ctx, t, c, crdGVK, "", name)
	a := crd.GetAnnotations()
	if crd.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" || a["meta.helm.sh/release-name"] != release || a["meta.helm.sh/release-namespace"] != namespace {
		t.Errorf("CRD %s is not the release's: labels %v, annotations %v", name, crd.GetLabels(), a)
	}
	if policy, want := a["helm.sh/resource-policy"], map[bool]string{true: "keep"}[keep]; policy != want {
		t.Errorf("CRD %s has helm.sh/resource-policy %q, want %q", name, policy, want)
	}
}

// hasSuspend reports whether the NodeTagSync CRD's schema has spec.suspend.
func hasSuspend(crd *unstructured.Unstructured) bool {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		if _, ok, _ := unstructured.NestedMap(v.(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", "suspend"); ok {
			return true
		}
	}
	return false
}

// deleteCRDs deletes tagsync's CRDs (and with them every object of their
// kinds) and waits until they are gone.
// crdDeletionWait is how long a CRD's deletion may take: the API server
// deletes it once its finalizer has removed every object of it, which on a
// loaded machine takes longer than waitFor.
const crdDeletionWait = 2 * time.Minute

// waitCRDsServed waits until the objects of every tagsync CRD can be
// listed. Right after a CRD is created or changed the API server
// (re)initializes its storage; a CRD deleted then fails to delete its
// objects ("storage is (re)initializing") and is retried with a backoff
// that can grow to minutes.
func waitCRDsServed(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	eventually(t, "tagsync's CRDs served", func() string {
		for _, name := range tagsyncCRDs {
			crd := newObject(crdGVK)
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return fmt.Sprintf("CRD %s: %v", name, err)
			}
			kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(schema.GroupVersionKind{Group: "tagsync.io", Version: "v1alpha1", Kind: kind + "List"})
			if err := c.List(ctx, list); err != nil {
				return fmt.Sprintf("listing %s: %v", kind, err)
			}
		}
		return ""
	})
}

// crdsLeft names a tagsync CRD that still exists, with its finalizers and
// conditions, or returns "" when none does.
func crdsLeft(ctx context.Context, c client.Client) string {
	for _, name := range tagsyncCRDs {
		crd := newObject(crdGVK)
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); !apierrors.IsNotFound(err) {
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			return fmt.Sprintf("CRD %s: %v; finalizers %v, conditions %v", name, err, crd.GetFinalizers(), conds)
		}
	}
	return ""
}

func deleteCRDs(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	waitCRDsServed(ctx, t, c)
	for _, name := range tagsyncCRDs {
		crd := newObject(crdGVK)
		crd.SetName(name)
		must(t, client.IgnoreNotFound(c.Delete(ctx, crd)))
	}
	eventuallyWithin(t, crdDeletionWait, "tagsync's CRDs deleted", func() string { return crdsLeft(ctx, c) })
}

// waitGroupGone waits until the API server's discovery no longer serves
// tagsync.io/v1alpha1.
func waitGroupGone(t *testing.T, cfg *rest.Config) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	must(t, err)
	eventuallyWithin(t, crdDeletionWait, "tagsync.io/v1alpha1 gone from discovery", func() string {
		if _, err := dc.ServerResourcesForGroupVersion("tagsync.io/v1alpha1"); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("discovery answers %v", err)
		}
		return ""
	})
}

func newObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(gvk)
	return o
}

// getObject reads an object, waiting for its kind to be served.
func getObject(ctx context.Context, t *testing.T, c client.Client, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	o := newObject(gvk)
	eventually(t, fmt.Sprintf("%s %s/%s readable", gvk.Kind, namespace, name), func() string {
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, o); err != nil {
			return err.Error()
		}
		return ""
	})
	return o
}

// setStatus writes status into o's status subresource.
func setStatus(ctx context.Context, t *testing.T, c client.Client, o *unstructured.Unstructured, status map[string]any) {
	t.Helper()
	o.Object["status"] = status
	must(t, c.Status().Update(ctx, o))
}

// helmCLI runs bin/helm against one cluster, with Helm's own configuration
// (repositories, registry logins, cache) in a temporary directory.
type helmCLI struct {
	env []string
}

func newHelmCLI(t *testing.T, cluster *testenv.Env) *helmCLI {
	t.Helper()
	home := t.TempDir()
	env := append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	if cluster != nil {
		env = append(env, "KUBECONFIG="+tempFile(t, "kubeconfig", string(cluster.KubeConfig)))
	}
	return &helmCLI{env: env}
}

// run runs bin/helm with args and returns its standard output; a failure
// fails the test.
func (h *helmCLI) run(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Env = h.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// try runs helm with args and returns its output (stdout and stderr) and
// error, for a step whose failure the test judges itself.
func (h *helmCLI) try(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Env = h.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// packageChart runs `helm package` on the chart in dir into dest and
// returns the package's path.
func (h *helmCLI) packageChart(t *testing.T, dir, dest string) string {
	t.Helper()
	h.run(t, "package", dir, "--destination", dest)
	pkgs, err := filepath.Glob(filepath.Join(dest, "*.tgz"))
	must(t, err)
	if len(pkgs) != 1 {
		t.Fatalf("helm package %s wrote %v, want one package", dir, pkgs)
	}
	return pkgs[0]
}

// extractChart writes charts/tagsync as it is at commit into dir (git
// archive) and returns the chart's directory.
func extractChart(t *testing.T, commit, dir string) string {
	t.Helper()
	cmd := exec.Command("git", "archive", "--format=tar", commit, "charts/tagsync")
	cmd.Dir = kube.RootDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git archive %s charts/tagsync (the test needs the repository's history, not a shallow clone): %v\n%s", commit, err, stderr.String())
	}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		path := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		must(t, os.MkdirAll(filepath.Dir(path), 0o755))
		b, err := io.ReadAll(tr)
		must(t, err)
		must(t, os.WriteFile(path, b, 0o644))
	}
	return filepath.Join(dir, "charts", "tagsync")
}
