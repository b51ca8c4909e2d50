package operations_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tagsync/tagsync/internal/testenv"
)

// TestDocsNameChartObjectsByFullname: the chart names its objects after
// its fullname (tagsync for release tagsync, foo-tagsync for release foo),
// so a doc that writes `<release>-x` names an object that does not exist
// for the release most users install.
func TestDocsNameChartObjectsByFullname(t *testing.T) {
	for path, text := range userDocs(t) {
		for _, m := range regexp.MustCompile(`<release>-[a-z-]+`).FindAllStringIndex(text, -1) {
			t.Errorf("%s:%d: %q: write <fullname>-… (the chart names objects after its fullname)", path, lineOf(text, m[0]), text[m[0]:m[1]])
		}
	}
}

// TestDocsVersionClaimsMatchTheBuild: the Helm the docs ask for is the one
// the Makefile tests with, and the minimum Kubernetes they state is the
// chart's kubeVersion.
func TestDocsVersionClaimsMatchTheBuild(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm := regexp.MustCompile(`(?m)^HELM_VERSION := v(\d+)\.`).FindStringSubmatch(readText(t, filepath.Join(root, "Makefile")))
	kube := regexp.MustCompile(`kubeVersion: ">=1\.(\d+)`).FindStringSubmatch(readText(t, filepath.Join(root, "charts", "tagsync", "Chart.yaml")))
	if helm == nil || kube == nil {
		t.Fatal("no HELM_VERSION in the Makefile or kubeVersion in Chart.yaml")
	}
	for path, text := range userDocs(t) {
		// The requirement lists ("`kubectl`, Helm 4 ..."), not statements of
		// when Helm added a flag.
		for _, m := range regexp.MustCompile("`kubectl`, Helm (\\d+)(\\.\\d+)?\\+?").FindAllStringSubmatchIndex(text, -1) {
			if major := text[m[2]:m[3]]; major != helm[1] {
				t.Errorf("%s:%d: %q, but the repository tests with Helm %s only (HELM_VERSION)", path, lineOf(text, m[0]), text[m[0]:m[1]], helm[1])
			}
		}
		for _, m := range regexp.MustCompile(`running Kubernetes 1\.(\d+) or later`).FindAllStringSubmatchIndex(text, -1) {
			if minor := text[m[2]:m[3]]; minor != kube[1] {
				t.Errorf("%s:%d: %q, but the chart's kubeVersion is >=1.%s", path, lineOf(text, m[0]), text[m[0]:m[1]], kube[1])
			}
		}
	}
}

// awsPackages are the SDK packages of the services whose IAM actions the
// docs grant.
var awsPackages = map[string]string{
	"ec2":         "github.com/aws/aws-sdk-go-v2/service/ec2",
	"autoscaling": "github.com/aws/aws-sdk-go-v2/service/autoscaling",
	"tag":         "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi",
	"sqs":         "github.com/aws/aws-sdk-go-v2/service/sqs",
	"events":      "github.com/aws/aws-sdk-go-v2/service/eventbridge",
}

// grantedToOthers are actions the docs' policies grant to someone else
// than tagsync.
var grantedToOthers = map[string]string{
	"sqs:SendMessage": "EventBridge's, in the queue's access policy",
}

// TestDocsGrantOnlyAWSActionsTheCodeCalls: every IAM action of those
// services the docs grant (in code blocks: policies, templates; and in
// tables) is an API call the code makes (or its batch form:
// sqs:DeleteMessage allows DeleteMessageBatch), so a policy copied from
// the docs grants nothing tagsync does not use. Condition keys
// (ec2:ResourceTag/..., ec2:CreateAction) are not actions.
func TestDocsGrantOnlyAWSActionsTheCodeCalls(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]string{} // service -> the code of the files that import its SDK package
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.Contains(p, "test/") {
				return err
			}
			code := readText(t, p)
			for svc, pkg := range awsPackages {
				if strings.Contains(code, `"`+pkg+`"`) {
					calls[svc] += code
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	action := regexp.MustCompile(`\b(ec2|autoscaling|tag|sqs|events):([A-Z][A-Za-z]+)\b(/)?`)
	for path, text := range userDocs(t) {
		for _, m := range action.FindAllStringSubmatchIndex(text, -1) {
			svc, op := text[m[2]:m[3]], text[m[4]:m[5]]
			if m[6] >= 0 || op == "CreateAction" || grantedToOthers[svc+":"+op] != "" || !inGrant(text, m[0]) {
				continue
			}
			if !regexp.MustCompile(`\.` + op + `(Batch)?\(`).MatchString(calls[svc]) {
				t.Errorf("%s:%d: %s:%s is named, but the code never calls %s on %s", path, lineOf(text, m[0]), svc, op, op, awsPackages[svc])
			}
		}
	}
}

// inGrant reports whether offset lies in a fenced code block or on a table
// row of a Markdown text: where the docs grant rights, not prose that says
// which are left out.
func inGrant(text string, offset int) bool {
	lineStart := strings.LastIndex(text[:offset], "\n") + 1
	if strings.HasPrefix(text[lineStart:], "|") {
		return true
	}
	return strings.Count(text[:offset], "```")%2 == 1
}
