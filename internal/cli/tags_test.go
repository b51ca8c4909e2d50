package cli

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv"
)

// tagsCase runs `tagsync tags args...` against ns and returns the output
// and exit code.
func tagsRun(t *testing.T, kc, ns string, args ...string) (string, string, int) {
	t.Helper()
	out, errOut, err := runCLI(context.Background(), append(append([]string{"tags"}, args...), "--kubeconfig", kc, "-n", ns)...)
	if err != nil {
		errOut += err.Error()
	}
	return out, errOut, ExitCode(err)
}

func getAzure(t *testing.T, env *testenv.Env, ns string) *v1alpha1.AzureMetadata {
	t.Helper()
	o := &v1alpha1.AzureMetadata{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "azure"}, o); err != nil {
		t.Fatal(err)
	}
	return o
}

func getAWS(t *testing.T, env *testenv.Env, ns string) *v1alpha1.AWSMetadata {
	t.Helper()
	o := &v1alpha1.AWSMetadata{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "aws"}, o); err != nil {
		t.Fatal(err)
	}
	return o
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

func TestTagsAdd(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	estate(t, env, ns)
	out, errOut, code := tagsRun(t, kc, ns, "add", "azuremetadata/azure", "team=web", "query=a=b")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	mustContain(t, "the output", out, "+ team=web", "+ query=a=b", "azuremetadata.tagsync.io/azure edited")
	got := getAzure(t, env, ns).Spec
	if got.Opcode != v1alpha1.OpcodeAdd || got.ResourceTags["team"] != "web" || got.ResourceTags["query"] != "a=b" || got.ResourceTags["env"] != "demo" {
		t.Errorf("spec after add: %+v", got)
	}
	if out, _, code := tagsRun(t, kc, ns, "add", "azuremetadata/azure", "team=web"); code != 0 || !strings.Contains(out, "unchanged") {
		t.Errorf("the same add again: exit %d, %s", code, out)
	}
}

func TestTagsUpdateAndRelease(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	estate(t, env, ns)
	out, errOut, code := tagsRun(t, kc, ns, "update", "aws/aws", "env=prod", "tier=gold")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	mustContain(t, "the output", out, "~ env: demo -> prod", "+ tier=gold", "awsmetadata.tagsync.io/aws edited")
	if got := getAWS(t, env, ns).Spec; got.ResourceTags["env"] != "prod" || got.ResourceTags["tier"] != "gold" {
		t.Errorf("spec after update: %+v", got)
	}
	out, errOut, code = tagsRun(t, kc, ns, "update", "awsmetadata/aws", "tier-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	mustContain(t, "the output", out, "- tier=gold (released")
	if _, ok := getAWS(t, env, ns).Spec.ResourceTags["tier"]; ok {
		t.Error("tier- left tier in the request")
	}
}

func TestTagsDeleteNeedsReplaceToChangeTheOpcode(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	estate(t, env, ns)
	_, errOut, code := tagsRun(t, kc, ns, "delete", "azuremetadata/azure", "env")
	if code != ExitRefused {
		t.Fatalf("delete on an add request with other tags: exit %d, want %d: %s", code, ExitRefused, errOut)
	}
	mustContain(t, "the refusal", errOut, "AzureMetadata "+ns+"/azure", "opcode is add", "cost-center", "--replace")
	out, errOut, code := tagsRun(t, kc, ns, "delete", "azuremetadata/azure", "env", "--replace")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	mustContain(t, "the output", out, "opcode: add -> delete", "- cost-center=eng-42 (released", "~ env: demo -> (any value)")
	got := getAzure(t, env, ns).Spec
	if got.Opcode != v1alpha1.OpcodeDelete || len(got.ResourceTags) != 1 || got.ResourceTags["env"] != "" {
		t.Errorf("spec after delete --replace: %+v", got)
	}
}

func TestTagsIgnore(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	estate(t, env, ns)
	out, errOut, code := tagsRun(t, kc, ns, "ignore", "awsmetadata/aws", "created-by", "owner-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	mustContain(t, "the output", out, "+ ignore created-by", "- ignore owner")
	if got := getAWS(t, env, ns).Spec.IgnoreTags; len(got) != 1 || got[0] != "created-by" {
		t.Errorf("ignoreTags %v, want [created-by]", got)
	}
	_, errOut, code = tagsRun(t, kc, ns, "ignore", "awsmetadata/aws", "env")
	if code != ExitRefused {
		t.Fatalf("ignoring a requested tag: exit %d: %s", code, errOut)
	}
	mustContain(t, "the refusal", errOut, `tag "env" is both in resourceTags and ignoreTags`, "nothing was sent")
}

func TestTagsDryRunChangesNothing(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	estate(t, env, ns)
	before := getAzure(t, env, ns)
	for _, mode := range []string{"--dry-run", "--dry-run=server"} {
		out, errOut, code := tagsRun(t, kc, ns, "update", "azuremetadata/azure", "env=prod", "cost-center-", mode)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", mode, code, errOut)
		}
		mustContain(t, mode, out, "opcode: add -> update", "~ env: demo -> prod", "- cost-center=eng-42", "edited (")
		if after := getAzure(t, env, ns); after.ResourceVersion != before.ResourceVersion {
			t.Errorf("%s changed the object: %+v", mode, after.Spec)
		}
	}
	out, _, code := tagsRun(t, kc, ns, "add", "azuremetadata/azure", "team=web", "--dry-run", "-o", "yaml")
	if code != 0 {
		t.Fatal(out)
	}
	mustContain(t, "-o yaml", out, "kind: AzureMetadata", "team: web", "env: demo")
}

func TestTagsMissingObject(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	estate(t, env, ns)
	_, errOut, code := tagsRun(t, kc, ns, "add", "azuremetadata/nope", "env=x")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	mustContain(t, "the error", errOut, "AzureMetadata "+ns+"/nope not found", "AzureMetadata in namespace "+ns+": azure")
}

func TestTagsRefusedBeforeTheAPICall(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	estate(t, env, ns)
	before := getAzure(t, env, ns)
	for args, want := range map[string]string{
		"a;b=x":       `tag name "a;b": Azure tag names may not contain`,
		"Azure-x=1":   "Azure reserves tag names",
		"Env=x":       "differ only in case",
		"k=" + long(): "Azure tag values must be at most 256 characters long",
	} {
		_, errOut, code := tagsRun(t, kc, ns, "add", "azuremetadata/azure", args)
		if code != ExitRefused {
			t.Errorf("%s: exit %d, want %d: %s", args, code, ExitRefused, errOut)
		}
		mustContain(t, args, errOut, "AzureMetadata "+ns+"/azure", want)
	}
	if after := getAzure(t, env, ns); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("a refused edit changed the object: %+v", after.Spec)
	}
	for _, args := range [][]string{{"add", "azuremetadata/azure"}, {"add", "azure", "x=1"}, {"add", "pods/x", "a=1"},
		{"add", "azure/azure", "novalue"}, {"ignore", "azure/azure", "k=v"}, {"add", "azure/azure", "a=1", "a=2"}} {
		if _, errOut, code := tagsRun(t, kc, ns, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, ExitUsage, errOut)
		}
	}
}

func long() string { return strings.Repeat("v", 257) }

// TestTagsRetriesAConcurrentEdit: another writer changes the object between
// the read and the patch; the patch (carrying the read resourceVersion) is
// refused as a conflict, and the edit is made again on the fresh object, so
// neither change is lost.
func TestTagsRetriesAConcurrentEdit(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	estate(t, env, ns)
	calls := 0
	beforeTagsPatch = func() {
		calls++
		if calls == 1 {
			o := getAzure(t, env, ns)
			o.Spec.ResourceTags["other"] = "writer"
			if err := env.Client.Update(context.Background(), o); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { beforeTagsPatch = nil })
	if _, errOut, code := tagsRun(t, kc, ns, "add", "azuremetadata/azure", "team=web"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if calls != 2 {
		t.Errorf("%d patches, want 2 (one conflict, one retry)", calls)
	}
	if got := getAzure(t, env, ns).Spec.ResourceTags; got["other"] != "writer" || got["team"] != "web" {
		t.Errorf("resourceTags %v: a change was lost", got)
	}
}
