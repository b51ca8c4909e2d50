package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// root is the repository's root (the test runs in hack/bundle).
const root = "../.."

// helmBinary is bin/helm, built by `make tools`; a missing helm fails the
// test, as in test/e2e.
func helmBinary(t *testing.T) string {
	t.Helper()
	p, _ := filepath.Abs(filepath.Join(root, "bin", "helm"))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("bin/helm is missing (%v): run `make tools` (make test builds it)", err)
	}
	return p
}

// TestBundleIsCurrent regenerates the bundle as `make bundle` does, with the
// placeholder digest, and fails when bundle/ differs: the bundle follows the
// chart and the generated CRDs (after `make generate`, run `make bundle`).
func TestBundleIsCurrent(t *testing.T) {
	files, err := generate(options{root: root, helm: helmBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "bundle")
	var onDisk []string
	for _, sub := range []string{"manifests", "metadata"} {
		entries, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, e := range entries {
			onDisk = append(onDisk, sub+"/"+e.Name())
		}
	}
	onDisk = append(onDisk, "bundle.Dockerfile")
	for _, name := range onDisk {
		if _, ok := files[name]; !ok {
			t.Errorf("bundle/%s is not generated any more: run make bundle", name)
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("bundle/%s is stale (%v): run make bundle and commit it", name, err)
		}
	}
}

// TestBundleValidates loads bundle/ as OLM does and runs operator-framework's
// validators on it: the default bundle validators (CSV, CRDs, bundle),
// OperatorHub (v2, with the Kubernetes version the bundle targets),
// standard capabilities and categories, the community operators' checks
// (with the bundle image's labels, index-path), good practices, the object
// validator and the removed-APIs check. Errors and warnings both fail.
func TestBundleValidates(t *testing.T) {
	for _, p := range validate(t, filepath.Join(root, "bundle")) {
		t.Error(p)
	}
}

// TestBundleValidationCatchesMistakes: the validators TestBundleValidates
// runs see a CSV without install modes or icon, with a category OperatorHub
// does not know, and an owned
// CRD missing from manifests/ (so a clean result means something).
func TestBundleValidationCatchesMistakes(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"manifests", "metadata"} {
		must(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
		entries, err := os.ReadDir(filepath.Join(root, "bundle", sub))
		must(t, err)
		for _, e := range entries {
			if e.Name() == "tagsync.io_awsmetadata.yaml" {
				continue
			}
			b, err := os.ReadFile(filepath.Join(root, "bundle", sub, e.Name()))
			must(t, err)
			must(t, os.WriteFile(filepath.Join(dir, sub, e.Name()), b, 0o644))
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "bundle", "bundle.Dockerfile"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "bundle.Dockerfile"), b, 0o644))
	csvPath := filepath.Join(dir, "manifests", Package+".clusterserviceversion.yaml")
	b, err = os.ReadFile(csvPath)
	must(t, err)
	var csv v1alpha1.ClusterServiceVersion
	must(t, yaml.Unmarshal(b, &csv))
	csv.Spec.InstallModes, csv.Spec.Icon = nil, nil
	csv.Annotations["categories"] = "Tagging"
	b, err = yaml.Marshal(&csv)
	must(t, err)
	must(t, os.WriteFile(csvPath, b, 0o644))
	problems := strings.Join(validate(t, dir), "\n")
	for _, want := range []string{"install mode", "icon", "categor", "awsmetadata"} {
		if !strings.Contains(strings.ToLower(problems), want) {
			t.Errorf("the validators did not report the %s mistake; they said:\n%s", want, problems)
		}
	}
}

// validate loads the bundle in dir as OLM does and returns what
// operator-framework's validators report, errors and warnings alike.
func validate(t *testing.T, dir string) []string {
	t.Helper()
	bundle, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return []string{fmt.Sprintf("loading %s: %v", dir, err)}
	}
	objs := append(bundle.ObjectsToValidate(), map[string]string{
		"k8s-version": MinKubeVersion,
		"index-path":  filepath.Join(dir, "bundle.Dockerfile"),
	})
	validators := append(slices.Clone(validation.DefaultBundleValidators),
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.CommunityOperatorValidator,
		validation.GoodPracticesValidator,
		validation.ObjectValidator,
		validation.AlphaDeprecatedAPIsValidator,
	)
	var results []errors.ManifestResult
	for _, v := range validators {
		results = append(results, v.Validate(objs...)...)
	}
	if len(results) == 0 {
		t.Fatal("the validators returned no result: nothing was validated")
	}
	var out []string
	for _, r := range results {
		for _, e := range r.Errors {
			out = append(out, fmt.Sprintf("%s: error: %v", r.Name, e))
		}
		for _, w := range r.Warnings {
			out = append(out, fmt.Sprintf("%s: warning: %v", r.Name, w))
		}
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestBundleCSV checks what the validators do not: all namespaces is the
// only install mode, every owned CRD has descriptors and ships in the
// bundle, the image is named by digest and listed among related images,
// the pod's security context passes restricted-v2 (no fixed user, group
// or fsGroup), the namespace comes from the downward API, and the
// annotations name the package and channel.
func TestBundleCSV(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "bundle", "manifests", Package+".clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var csv v1alpha1.ClusterServiceVersion
	if err := yaml.UnmarshalStrict(b, &csv); err != nil {
		t.Fatal(err)
	}
	for _, m := range csv.Spec.InstallModes {
		if m.Supported != (m.Type == v1alpha1.InstallModeTypeAllNamespaces) {
			t.Errorf("install mode %s supported=%v; only AllNamespaces is", m.Type, m.Supported)
		}
	}
	if len(csv.Spec.InstallModes) != 4 {
		t.Errorf("install modes %v, want all four stated", csv.Spec.InstallModes)
	}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		if d.DisplayName == "" || d.Description == "" || len(d.SpecDescriptors) == 0 || len(d.StatusDescriptors) == 0 {
			t.Errorf("owned CRD %s lacks a display name, description or descriptors", d.Name)
		}
		if _, err := os.Stat(filepath.Join(root, "bundle", "manifests", "tagsync.io_"+strings.TrimSuffix(d.Name, ".tagsync.io")+".yaml")); err != nil {
			t.Errorf("owned CRD %s is not in bundle/manifests: %v", d.Name, err)
		}
	}
	deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deps) != 1 {
		t.Fatalf("%d deployments, want 1", len(deps))
	}
	pod := deps[0].Spec.Template.Spec
	c := pod.Containers[0]
	if want := DefaultImage + "@" + PlaceholderDigest; c.Image != want || csv.Annotations["containerImage"] != want ||
		!slices.ContainsFunc(csv.Spec.RelatedImages, func(r v1alpha1.RelatedImage) bool { return r.Image == want }) {
		t.Errorf("image %s, containerImage %s, related %v; want %s everywhere", c.Image, csv.Annotations["containerImage"], csv.Spec.RelatedImages, want)
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.FSGroup != nil {
		t.Errorf("pod securityContext %+v: restricted-v2 assigns the user, group and fsGroup", sc)
	}
	if sc := c.SecurityContext; sc == nil || sc.RunAsUser != nil || sc.RunAsGroup != nil {
		t.Errorf("container securityContext %+v: restricted-v2 assigns the user and group", sc)
	}
	for _, a := range c.Args {
		if strings.Contains(a, renderNamespace) {
			t.Errorf("argument %s names the rendering's namespace; want $(POD_NAMESPACE)", a)
		}
	}
	if !slices.Contains(c.Args, "--openshift-namespace=$(POD_NAMESPACE)") ||
		!slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
		}) {
		t.Errorf("args %v, env %v: want --openshift-namespace=$(POD_NAMESPACE) from the downward API", c.Args, c.Env)
	}
	ann, err := os.ReadFile(filepath.Join(root, "bundle", "metadata", "annotations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"operators.operatorframework.io.bundle.package.v1: " + Package, "operators.operatorframework.io.bundle.channels.v1: " + Channel} {
		if !strings.Contains(string(ann), want) {
			t.Errorf("metadata/annotations.yaml lacks %q", want)
		}
	}
}

// TestGenerateRefusesABadDigest: the image is named by a digest or not at
// all.
func TestGenerateRefusesABadDigest(t *testing.T) {
	for _, d := range []string{"latest", "sha256:abc", "sha512:" + strings.Repeat("0", 128)} {
		if _, err := generate(options{root: root, helm: "/nonexistent", digest: d}); err == nil || !strings.Contains(err.Error(), "digest") {
			t.Errorf("digest %q: err %v, want a refusal", d, err)
		}
	}
}
