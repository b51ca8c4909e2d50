package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestTagsSurfacesAnAdmissionRefusal: a ValidatingAdmissionPolicy the CLI
// cannot know of refuses the edit; tags says so naming the object, exits 3
// and the object is unchanged.
func TestTagsSurfacesAnAdmissionRefusal(t *testing.T) {
	f := newTagsFixture(t)
	denyTag(t, f.env, f.ns, "blocked")
	testenv.Eventually(t, 30*time.Second, "the policy refusing a server dry run", func() string {
		_, errOut, code := f.run("add", "azuremetadata/azure", "blocked=1", "--dry-run=server")
		if code != ExitRefused {
			return "not refused yet: " + errOut
		}
		return ""
	})
	before := f.azure()
	f.edit(ExitRefused, "add azuremetadata/azure blocked=1", "AzureMetadata "+f.ns+"/azure: the API server refused the change", "the tag blocked is not allowed")
	if after := f.azure(); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the refused edit changed the object: %+v", after.Spec)
	}
}

// denyTag installs a policy refusing AzureMetadata in ns that request tag.
func denyTag(t *testing.T, env *testenv.Env, ns, tag string) {
	t.Helper()
	ctx := context.Background()
	nsObj := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels = map[string]string{"deny-tag": tag}
	if err := env.Client.Update(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{v1alpha1.GroupVersion.Group}, APIVersions: []string{"*"}, Resources: []string{"azuremetadata"}}}}}},
			Validations: []admissionv1.Validation{{
				Expression: "!has(object.spec.resourceTags) || !('" + tag + "' in object.spec.resourceTags)",
				Message:    "the tag " + tag + " is not allowed in this namespace"}},
		}}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: ns,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"deny-tag": tag}}}}}
	for _, o := range []client.Object{policy, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
}

// TestAdmissionMirrorAgreesWithTheAPIServer: for each spec, the CLI's
// check of the admission rules refuses exactly when the real API server
// (schema and CEL) refuses a server dry run create.
func TestAdmissionMirrorAgreesWithTheAPIServer(t *testing.T) {
	env, _ := kube(t)
	ns := newNamespace(t, env)
	type spec struct {
		tags   map[string]string
		ignore []string
	}
	one := func(k, v string) spec { return spec{tags: map[string]string{k: v}} }
	many := func(n int) spec {
		s := spec{tags: map[string]string{}}
		for i := range n {
			s.tags["t"+strings.Repeat("x", i)] = "v"
		}
		return s
	}
	cases := map[string]spec{
		"plain": one("env", "prod"), "empty value": one("env", ""), "semicolon": one("a;b", "x"), "slash": one("a/b", "x"),
		"backslash": one(`a\b`, "x"), "percent": one("50%", "x"), "question": one("why?", "x"), "lt": one("a<b", "x"),
		"azure prefix": one("AZURE-x", "x"), "microsoft": one("microsoft.x", "x"), "windows": one("WiNdOwS", "x"),
		"aws prefix": one("AWS:x", "x"), "aws lower": one("aws:x", "x"), "space": one("Cost Center", "4711"),
		"unicode": one("Kostenstelle-Ü", "ä"), "comma value": one("env", "a,b"), "hash": one("a#b", "x"),
		"name 128": one(strings.Repeat("n", 128), "x"), "name 129": one(strings.Repeat("n", 129), "x"),
		"name 512": one(strings.Repeat("n", 512), "x"), "name 513": one(strings.Repeat("n", 513), "x"),
		"value 256": one("k", strings.Repeat("v", 256)), "value 257": one("k", strings.Repeat("v", 257)),
		"value ü 256": one("k", strings.Repeat("ü", 256)),
		"50 tags":     many(50), "51 tags": many(51), "empty name": one("", "x"),
		"ignored and requested": {tags: map[string]string{"env": "x"}, ignore: []string{"env"}},
		"ignored other case":    {tags: map[string]string{"env": "x"}, ignore: []string{"ENV"}},
		"ignored other":         {tags: map[string]string{"env": "x"}, ignore: []string{"owner"}},
		"ignored too long":      {ignore: []string{strings.Repeat("i", 129)}},
	}
	for name, c := range cases {
		for _, k := range []providerKind{azureKind, awsKind} {
			s, serverErr := dryRunCreate(env, k, ns, c.tags, c.ignore)
			mine := k.admission(s)
			if (serverErr != nil) != (len(mine) > 0) {
				t.Errorf("%s %s: the API server says %v, the CLI %q", k.kind, name, serverErr, mine)
			}
		}
	}
}

// TestValidateAgreesWithAdmission: `validate --cloud azure|aws` refuses
// every tag set the real API server refuses as the resourceTags of an
// AzureMetadata / AWSMetadata (a server dry run create), and accepts the
// others unless the cloud's own rules (what the controller approves)
// refuse them.
func TestValidateAgreesWithAdmission(t *testing.T) {
	env, _ := kube(t)
	ns := newNamespace(t, env)
	cases := map[string]map[string]string{
		"semicolon": {"a;b": "1"}, "plain": {"env": "prod"}, "slash": {"a/b": "x"}, "percent": {"50%": "x"},
		"azure prefix": {"AZURE-x": "x"}, "aws prefix": {"AWS:x": "x"}, "space": {"Cost Center": "4711"},
		"unicode": {"Kostenstelle-Ü": "ä"}, "comma value": {"env": "a,b"}, "hash": {"a#b": "x"},
		"name 129": {strings.Repeat("n", 129): "x"}, "name 513": {strings.Repeat("n", 513): "x"},
		"value 257": {"k": strings.Repeat("v", 257)}, "case twins": {"Env": "a", "env": "b"},
		"semicolon among valid": {"env": "prod", "x;y": "1"},
	}
	for name, set := range cases {
		for _, k := range []providerKind{azureKind, awsKind} {
			_, serverErr := dryRunCreate(env, k, ns, set, nil)
			data, err := yaml.Marshal(set)
			if err != nil {
				t.Fatal(err)
			}
			file := writeFile(t, "tags.yaml", string(data))
			cloud := map[string]string{"AzureMetadata": "azure", "AWSMetadata": "aws"}[k.kind]
			_, errOut, code := runValidateCmd(t, "--cloud", cloud, "-f", file)
			cloudErr := k.rules.ValidateSet(tags.Set(set))
			switch {
			case serverErr != nil && code != ExitInvalid:
				t.Errorf("%s %s: the API server refuses (%v), validate exits %d", k.kind, name, serverErr, code)
			case serverErr == nil && (code == ExitInvalid) != (cloudErr != nil):
				t.Errorf("%s %s: admitted, cloud rules say %v, validate exits %d: %s", k.kind, name, cloudErr, code, errOut)
			}
		}
	}
}

// dryRunCreate asks the API server to admit (a server dry run: nothing is
// stored) an object of kind k in ns with opcode update requesting request
// and ignoring ignore. It returns the object's spec and the server's refusal.
func dryRunCreate(env *testenv.Env, k providerKind, ns string, request map[string]string, ignore []string) (providerSpec, error) {
	obj := k.newObject()
	obj.SetNamespace(ns)
	obj.SetName("dry-run")
	s := k.view(obj)
	*s.opcode, *s.tags = v1alpha1.OpcodeUpdate, request
	if ignore != nil {
		*s.ignore = ignore
	}
	return s, env.Client.Create(context.Background(), obj, client.DryRunAll)
}
