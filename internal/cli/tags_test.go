package cli

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv"
)

// tagsFixture is a namespace holding the estate's objects (AzureMetadata
// azure, AWSMetadata aws), which `tagsync tags` edits.
type tagsFixture struct {
	t      *testing.T
	env    *testenv.Env
	kc, ns string
}

func newTagsFixture(t *testing.T) *tagsFixture {
	t.Helper()
	env, kc := kube(t)
	ns := newNamespace(t, env)
	estate(t, env, ns)
	return &tagsFixture{t: t, env: env, kc: kc, ns: ns}
}

// run runs `tagsync tags args...` against the namespace and returns the
// output and exit code.
func (f *tagsFixture) run(args ...string) (string, string, int) {
	return tagsRun(f.t, f.kc, f.ns, args...)
}

// edit runs `tagsync tags ARGS` (ARGS split at spaces), which must exit
// with code and say wants (on stdout when it succeeds, else on stderr);
// it returns what it said.
func (f *tagsFixture) edit(code int, args string, wants ...string) string {
	f.t.Helper()
	out, errOut, got := f.run(strings.Fields(args)...)
	if got != code {
		f.t.Fatalf("tags %s: exit %d, want %d: %s", args, got, code, errOut)
	}
	if code != 0 {
		out = errOut
	}
	mustContain(f.t, "tags "+args, out, wants...)
	return out
}

func (f *tagsFixture) azure() *v1alpha1.AzureMetadata {
	f.t.Helper()
	return getAzure(f.t, f.env, f.ns)
}

func (f *tagsFixture) aws() *v1alpha1.AWSMetadata {
	f.t.Helper()
	o := &v1alpha1.AWSMetadata{}
	if err := f.env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "aws"}, o); err != nil {
		f.t.Fatal(err)
	}
	return o
}

// tagsRun runs `tagsync tags args...` against ns and returns the output
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

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

func TestTagsAdd(t *testing.T) {
	f := newTagsFixture(t)
	f.edit(0, "add azuremetadata/azure team=web query=a=b", "+ team=web", "+ query=a=b", "azuremetadata.tagsync.io/azure edited")
	got := f.azure().Spec
	if got.Opcode != v1alpha1.OpcodeAdd || got.ResourceTags["team"] != "web" || got.ResourceTags["query"] != "a=b" || got.ResourceTags["env"] != "demo" {
		t.Errorf("spec after add: %+v", got)
	}
	f.edit(0, "add azuremetadata/azure team=web", "unchanged")
}

func TestTagsUpdateAndRelease(t *testing.T) {
	f := newTagsFixture(t)
	f.edit(0, "update aws/aws env=prod tier=gold", "~ env: demo -> prod", "+ tier=gold", "awsmetadata.tagsync.io/aws edited")
	if got := f.aws().Spec; got.ResourceTags["env"] != "prod" || got.ResourceTags["tier"] != "gold" {
		t.Errorf("spec after update: %+v", got)
	}
	f.edit(0, "update awsmetadata/aws tier-", "- tier=gold (released")
	if _, ok := f.aws().Spec.ResourceTags["tier"]; ok {
		t.Error("tier- left tier in the request")
	}
}

func TestTagsDeleteNeedsReplaceToChangeTheOpcode(t *testing.T) {
	f := newTagsFixture(t)
	f.edit(ExitRefused, "delete azuremetadata/azure env", "AzureMetadata "+f.ns+"/azure", "opcode is add", "cost-center", "--replace")
	f.edit(0, "delete azuremetadata/azure env --replace", "opcode: add -> delete", "- cost-center=eng-42 (released", "~ env: demo -> (any value)")
	got := f.azure().Spec
	if got.Opcode != v1alpha1.OpcodeDelete || len(got.ResourceTags) != 1 || got.ResourceTags["env"] != "" {
		t.Errorf("spec after delete --replace: %+v", got)
	}
}

func TestTagsIgnore(t *testing.T) {
	f := newTagsFixture(t)
	f.edit(0, "ignore awsmetadata/aws created-by owner-", "+ ignore created-by", "- ignore owner")
	if got := f.aws().Spec.IgnoreTags; len(got) != 1 || got[0] != "created-by" {
		t.Errorf("ignoreTags %v, want [created-by]", got)
	}
	f.edit(ExitRefused, "ignore awsmetadata/aws env", `tag "env" is both in resourceTags and ignoreTags`, "nothing was sent")
}

func TestTagsDryRunChangesNothing(t *testing.T) {
	f := newTagsFixture(t)
	before := f.azure()
	for _, mode := range []string{"--dry-run", "--dry-run=server"} {
		f.edit(0, "update azuremetadata/azure env=prod cost-center- "+mode, "opcode: add -> update", "~ env: demo -> prod", "- cost-center=eng-42", "edited (")
		if after := f.azure(); after.ResourceVersion != before.ResourceVersion {
			t.Errorf("%s changed the object: %+v", mode, after.Spec)
		}
	}
	f.edit(0, "add azuremetadata/azure team=web --dry-run -o yaml", "kind: AzureMetadata", "team: web", "env: demo")
}

func TestTagsMissingObject(t *testing.T) {
	f := newTagsFixture(t)
	f.edit(1, "add azuremetadata/nope env=x", "AzureMetadata "+f.ns+"/nope not found", "AzureMetadata in namespace "+f.ns+": azure")
}

func TestTagsRefusedBeforeTheAPICall(t *testing.T) {
	f := newTagsFixture(t)
	before := f.azure()
	for args, want := range map[string]string{
		"a;b=x":       `tag name "a;b": Azure tag names may not contain`,
		"Azure-x=1":   "Azure reserves tag names",
		"Env=x":       "differ only in case",
		"k=" + long(): "Azure tag values must be at most 256 characters long",
	} {
		_, errOut, code := f.run("add", "azuremetadata/azure", args)
		if code != ExitRefused {
			t.Errorf("%s: exit %d, want %d: %s", args, code, ExitRefused, errOut)
		}
		mustContain(t, args, errOut, "AzureMetadata "+f.ns+"/azure", want)
	}
	if after := f.azure(); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("a refused edit changed the object: %+v", after.Spec)
	}
	for _, args := range [][]string{{"add", "azuremetadata/azure"}, {"add", "azure", "x=1"}, {"add", "pods/x", "a=1"},
		{"add", "azure/azure", "novalue"}, {"ignore", "azure/azure", "k=v"}, {"add", "azure/azure", "a=1", "a=2"}} {
		if _, errOut, code := f.run(args...); code != ExitUsage {
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
	f := newTagsFixture(t)
	calls := 0
	beforeTagsPatch = func() {
		calls++
		if calls == 1 {
			o := f.azure()
			o.Spec.ResourceTags["other"] = "writer"
			if err := f.env.Client.Update(context.Background(), o); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { beforeTagsPatch = nil })
	f.edit(0, "add azuremetadata/azure team=web")
	if calls != 2 {
		t.Errorf("%d patches, want 2 (one conflict, one retry)", calls)
	}
	if got := f.azure().Spec.ResourceTags; got["other"] != "writer" || got["team"] != "web" {
		t.Errorf("resourceTags %v: a change was lost", got)
	}
}
