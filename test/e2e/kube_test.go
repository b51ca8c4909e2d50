package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// serviceAccountUser is the user name Kubernetes gives a ServiceAccount's
// tokens, and serviceAccountGroups its groups.
func serviceAccountUser(namespace, name string) string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name)
}

func serviceAccountGroups(namespace string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
}

// nodeUser and nodeGroups are a kubelet's identity.
func nodeUser(node string) string { return "system:node:" + node }

var nodeGroups = []string{"system:nodes", "system:authenticated"}

// impersonatingConfig is the admin config acting as user in groups (the
// envtest admin is in system:masters, so it may impersonate anyone).
func impersonatingConfig(user string, groups ...string) *rest.Config {
	cfg := rest.CopyConfig(kube.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return cfg
}

// impersonatingClient is a client acting as user in groups.
func impersonatingClient(t testing.TB, user string, groups ...string) client.Client {
	t.Helper()
	c, err := client.New(impersonatingConfig(user, groups...), client.Options{Scheme: kube.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeKubeconfig writes the admin kubeconfig of the test API server,
// impersonating user in groups (no impersonation when user is "").
func writeKubeconfig(t testing.TB, user string, groups ...string) string {
	t.Helper()
	kc, err := kubeconfigAs(kube.KubeConfig, user, groups...)
	must(t, err)
	return tempFile(t, "kubeconfig", kc)
}

// ensureNamespace creates a namespace unless it exists. Namespaces are left
// behind: envtest runs no namespace controller to finish deleting them.
func ensureNamespace(ctx context.Context, t testing.TB, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := kube.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// ensureNamespaces creates the namespaces objs are in.
func ensureNamespaces(ctx context.Context, t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	seen := map[string]bool{"": true}
	for _, o := range objs {
		if ns := o.GetNamespace(); !seen[ns] {
			seen[ns] = true
			ensureNamespace(ctx, t, ns)
		}
	}
}

// deleteOnCleanup deletes cluster-scoped objects when the test ends.
func deleteOnCleanup(t testing.TB, objs ...*unstructured.Unstructured) {
	t.Cleanup(func() {
		for _, o := range objs {
			if err := kube.Client.Delete(context.Background(), o.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	})
}

// installCRDs applies crds and waits until lists (the List kinds of their
// resources) are served. When the test ends it deletes them and waits until
// they are gone, so that a later test installing them again does not meet
// them still terminating.
func installCRDs(t testing.TB, crds []*unstructured.Unstructured, lists ...schema.GroupVersionKind) {
	t.Helper()
	ctx := t.Context()
	apply(ctx, t, crds)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, crd := range crds {
			must(t, client.IgnoreNotFound(kube.Client.Delete(ctx, crd.DeepCopy())))
		}
		for _, crd := range crds {
			eventually(t, "CRD "+crd.GetName()+" deleted", func() string {
				if err := kube.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd.DeepCopy()); !apierrors.IsNotFound(err) {
					return fmt.Sprintf("still there (%v)", err)
				}
				return ""
			})
		}
	})
	for _, gvk := range lists {
		eventually(t, gvk.Kind+" served", func() string {
			var list unstructured.UnstructuredList
			list.SetGroupVersionKind(gvk)
			if err := kube.Client.List(ctx, &list); err != nil {
				return err.Error()
			}
			return ""
		})
	}
}

// cleanupSyncObjects deletes every Node and NodeTagSync when the test ends,
// so the next test starts from an empty cluster.
func cleanupSyncObjects(t testing.TB) {
	t.Cleanup(func() {
		ctx := context.Background()
		_ = kube.Client.DeleteAllOf(ctx, &v1alpha1.NodeTagSync{})
		_ = kube.Client.DeleteAllOf(ctx, &corev1.Node{})
	})
}

// mergePatch sends a JSON merge patch with c.
func mergePatch(ctx context.Context, c client.Client, obj client.Object, patch string, opts ...client.PatchOption) error {
	return c.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(patch)), opts...)
}

// must fails the test on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tempFile writes content to a new file in the test's temp dir.
func tempFile(t testing.TB, name, content string) string {
	t.Helper()
	return filepath.Join(tempFiles(t, map[string][]byte{name: []byte(content)}), name)
}

// tempFiles writes files (name to content) into a new directory in the
// test's temp dir, and returns the directory.
func tempFiles(t testing.TB, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		must(t, os.WriteFile(filepath.Join(dir, name), content, 0o600))
	}
	return dir
}

// fieldOwner is the server-side-apply field manager of these tests.
const fieldOwner = client.FieldOwner("tagsync-e2e")

// apply server-side-applies objects as the cluster admin, with strict field
// validation (an unknown or misspelt field is an error).
func apply(ctx context.Context, t testing.TB, objs []*unstructured.Unstructured, opts ...client.ApplyOption) {
	t.Helper()
	for _, o := range objs {
		if err := applyOne(ctx, o, opts...); err != nil {
			t.Fatal(err)
		}
	}
}

func applyOne(ctx context.Context, o *unstructured.Unstructured, opts ...client.ApplyOption) error {
	o = o.DeepCopy()
	o.SetResourceVersion("")
	all := append([]client.ApplyOption{fieldOwner, client.ForceOwnership}, opts...)
	if err := kube.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), all...); err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
	}
	return nil
}
