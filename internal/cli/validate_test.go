package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tagsync/tagsync/internal/openshift"
)

// runValidateCmd runs `tagsync validate args...` in process and returns its
// stdout, stderr and the exit code main would use.
func runValidateCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, err := runWith(context.Background(), []*cobra.Command{NewValidateCommand()}, append([]string{"validate"}, args...)...)
	code = ExitCode(err)
	if err != nil && code == 0 {
		t.Fatalf("error %v with exit code 0", err)
	}
	return stdout, stderr, code
}

const validAzureConfig = `apiVersion: v1
platform:
  azure:
    region: eastus
    userTags:
      env: prod
      query: "a<b"
`

const invalidAzureConfig = `apiVersion: v1
platform:
  azure:
    region: eastus
    userTags:
      Env: prod
      env: dev
      owner-: team1
      Name: web
      app: ""
`

func TestValidateInstallConfigValid(t *testing.T) {
	out, errOut, code := runValidateCmd(t, "--install-config", writeFile(t, "install-config.yaml", validAzureConfig))
	if code != 0 || out != "valid: 2 userTags\n" || errOut != "" {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestValidateInstallConfigInvalid: every problem the installer's rules
// find (openshift.ValidateUserTags) is one line on stderr, in their order.
func TestValidateInstallConfigInvalid(t *testing.T) {
	out, errOut, code := runValidateCmd(t, "--install-config", writeFile(t, "install-config.yaml", invalidAzureConfig))
	if code != ExitInvalid || out != "" {
		t.Fatalf("code %d, stdout %q", code, out)
	}
	want := openshift.ValidateUserTags(map[string]string{"Env": "prod", "env": "dev", "owner-": "team1", "Name": "web", "app": ""})
	if want == nil || errOut != want.Error()+"\n" || strings.Count(errOut, "\n") != 4 {
		t.Errorf("stderr:\n%s\nwant the installer's 4 problems, one a line:\n%v", errOut, want)
	}
}

func TestValidateInstallConfigError(t *testing.T) {
	_, _, err := runWith(context.Background(), []*cobra.Command{NewValidateCommand()}, "validate", "--install-config", writeFile(t, "ic.yaml", invalidAzureConfig))
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitInvalid || err.Error() != "invalid: 4 problems" {
		t.Fatalf("error %v (%T)", err, err)
	}
}

func TestValidateInstallConfigOtherCloud(t *testing.T) {
	doc := "platform:\n  azure:\n    cloudName: AzureUSGovernmentCloud\n    userTags:\n      env: prod\n"
	_, errOut, code := runValidateCmd(t, "--install-config", writeFile(t, "ic.yaml", doc))
	if code != ExitInvalid || !strings.Contains(errOut, "supported on AzurePublicCloud only") {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
}

func TestValidateInstallConfigAWS(t *testing.T) {
	ok := "platform:\n  aws:\n    region: us-east-1\n    userTags:\n      Env: a\n      env: b\n      team/name: c d\n"
	out, _, code := runValidateCmd(t, "--install-config", writeFile(t, "ic.yaml", ok))
	if code != 0 || out != "valid: 3 userTags\n" {
		t.Fatalf("code %d, stdout %q", code, out)
	}
	bad := "platform:\n  aws:\n    userTags:\n      Name: a\n      kubernetes.io/cluster/x: owned\n"
	_, errOut, code := runValidateCmd(t, "--install-config", writeFile(t, "ic.yaml", bad))
	if code != ExitInvalid || strings.Count(errOut, "\n") != 2 || !strings.Contains(errOut, "platform.aws.userTags[Name]") {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
}

func TestValidateInstallConfigUnreadable(t *testing.T) {
	cases := map[string]string{
		"missing file":  filepath.Join(t.TempDir(), "absent.yaml"),
		"directory":     t.TempDir(),
		"malformed":     writeFile(t, "ic.yaml", "platform: ["),
		"duplicate key": writeFile(t, "ic.yaml", "platform:\n  azure:\n    userTags:\n      a: x\n      a: y\n"),
		"not a map":     writeFile(t, "ic.yaml", "- 1\n"),
		"no platform":   writeFile(t, "ic.yaml", "apiVersion: v1\nplatform:\n  gcp: {}\n"),
		"empty":         writeFile(t, "ic.yaml", ""),
	}
	for name, path := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runValidateCmd(t, "--install-config", path)
			if code != ExitUnreadable || out != "" || errOut != "" {
				t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}

func TestValidateTags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		out  string // stdout, when code is 0
	}{
		{"one flag, comma-separated", []string{"--tags", "env=prod,team=web"}, 0, "valid: 2 tags\n"},
		{"repeated flag", []string{"--tags", "env=prod", "--tags", "team=web"}, 0, "valid: 2 tags\n"},
		{"value containing '='", []string{"--tags", "query=a=b"}, 0, "valid: 1 tag\n"},
		{"the +-@ range: a<b accepted", []string{"--tags", "env=a<b"}, 0, "valid: 1 tag\n"},
		{"empty value refused by openshift", []string{"--tags", "env="}, ExitInvalid, ""},
		{"restricted key", []string{"--tags", "Azure-x=1"}, ExitInvalid, ""},
		{"case duplicates", []string{"--tags", "Env=a,env=b"}, ExitInvalid, ""},
		{"11 tags", []string{"--tags", "a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1,j=1,k=1"}, ExitInvalid, ""},
		{"explicit --rules openshift", []string{"--rules", "openshift", "--tags", "env=prod"}, 0, "valid: 1 tag\n"},

		{"azure: empty value is fine", []string{"--rules", "azure", "--tags", "env="}, 0, "valid: 1 tag\n"},
		{"azure: space in key is fine", []string{"--rules", "azure", "--tags", "cost center=1"}, 0, "valid: 1 tag\n"},
		{"azure: reserved prefix", []string{"--rules", "azure", "--tags", "microsoftX=1"}, ExitInvalid, ""},
		{"azure: forbidden character in name", []string{"--rules", "azure", "--tags", "a<b=1"}, ExitInvalid, ""},
		{"azure: case duplicates", []string{"--rules", "azure", "--tags", "Env=a,env=b"}, ExitInvalid, ""},

		{"aws: case variants are two tags", []string{"--rules", "aws", "--tags", "Env=a,env=b"}, 0, "valid: 2 tags\n"},
		{"aws: '<' refused", []string{"--rules", "aws", "--tags", "env=a<b"}, ExitInvalid, ""},
		{"aws: reserved aws:", []string{"--rules", "aws", "--tags", "AWS:x=1"}, ExitInvalid, ""},

		{"pair without '='", []string{"--tags", "env=prod,team"}, ExitUnreadable, ""},
		{"same key twice", []string{"--tags", "env=a", "--tags", "env=b"}, ExitUnreadable, ""},
		{"unknown rules", []string{"--rules", "gcp", "--tags", "a=b"}, ExitUnreadable, ""},
		{"unknown output", []string{"-o", "wide", "--tags", "a=b"}, ExitUnreadable, ""},
		{"-o text is -o table", []string{"-o", "text", "--tags", "a=b"}, 0, "valid: 1 tag\n"},
		{"-o yaml", []string{"-o", "yaml", "--tags", "a=b"}, 0, "problems: []\nvalid: true\n"},
		{"unknown flag", []string{"--tag", "a=b"}, ExitUnreadable, ""},
		{"positional argument", []string{"a=b"}, ExitUnreadable, ""},
		{"nothing to validate", nil, ExitUnreadable, ""},
		{"--install-config with --tags", []string{"--install-config", "x.yaml", "--tags", "a=b"}, ExitUnreadable, ""},
		{"--install-config with --rules", []string{"--install-config", "x.yaml", "--rules", "aws"}, ExitUnreadable, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runValidateCmd(t, c.args...)
			if code != c.code {
				t.Fatalf("exit code %d, want %d (stdout %q, stderr %q)", code, c.code, out, errOut)
			}
			if code == 0 && out != c.out {
				t.Fatalf("stdout %q, want %q", out, c.out)
			}
			if code == ExitInvalid && (out != "" || errOut == "") {
				t.Fatalf("invalid: stdout %q, stderr %q", out, errOut)
			}
		})
	}
}

func TestValidateTagsFile(t *testing.T) {
	yamlFile := writeFile(t, "tags.yaml", "env: prod\nteam: web\n")
	jsonFile := writeFile(t, "tags.json", `{"env": "prod", "query": "a=b"}`)
	out, _, code := runValidateCmd(t, "-f", yamlFile)
	if code != 0 || out != "valid: 2 tags\n" {
		t.Fatalf("yaml: code %d, stdout %q", code, out)
	}
	out, _, code = runValidateCmd(t, "--file", jsonFile, "--tags", "owner=me")
	if code != 0 || out != "valid: 3 tags\n" {
		t.Fatalf("json + --tags: code %d, stdout %q", code, out)
	}
	_, errOut, code := runValidateCmd(t, "-f", writeFile(t, "bad.yaml", "Name: x\nok: \"\"\n"))
	if code != ExitInvalid || strings.Count(errOut, "\n") != 2 {
		t.Fatalf("invalid file: code %d, stderr %q", code, errOut)
	}
	for name, path := range map[string]string{
		"missing":             filepath.Join(t.TempDir(), "absent.yaml"),
		"list":                writeFile(t, "list.yaml", "- a\n- b\n"),
		"nested map":          writeFile(t, "nested.yaml", "a:\n  b: c\n"),
		"malformed":           writeFile(t, "bad.json", `{"a": `),
		"duplicate key":       writeFile(t, "dup.yaml", "a: 1\na: 2\n"),
		"key also in --tags":  yamlFile,
		"directory, not file": t.TempDir(),
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"-f", path}
			if name == "key also in --tags" {
				args = append(args, "--tags", "env=dev")
			}
			if _, _, code := runValidateCmd(t, args...); code != ExitUnreadable {
				t.Fatalf("exit code %d, want %d", code, ExitUnreadable)
			}
		})
	}
}

func TestValidateJSON(t *testing.T) {
	decode := func(t *testing.T, out string) report {
		t.Helper()
		var r report
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		return r
	}
	out, errOut, code := runValidateCmd(t, "-o", "json", "--tags", "env=prod")
	if code != 0 || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, `"problems": []`) {
		t.Fatalf("valid output %q lacks an empty problems list", out)
	}
	if r := decode(t, out); !r.Valid || len(r.Problems) != 0 {
		t.Fatalf("report %+v", r)
	}

	out, errOut, code = runValidateCmd(t, "-o", "json", "--install-config", writeFile(t, "ic.yaml", invalidAzureConfig))
	if code != ExitInvalid || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "; < = >") {
		t.Errorf("JSON output escapes < and >: %s", out)
	}
	r := decode(t, out)
	var gotTags []string
	for _, p := range r.Problems {
		gotTags = append(gotTags, p.Tag)
		if p.Message == "" || strings.Contains(p.Message, "\n") {
			t.Errorf("message %q", p.Message)
		}
	}
	if want := []string{"", "Name", "app", "owner-"}; r.Valid || !reflect.DeepEqual(gotTags, want) {
		t.Fatalf("valid %v, tags %q, want %q", r.Valid, gotTags, want)
	}

	out, _, code = runValidateCmd(t, "-o", "json", "--rules", "azure", "--tags", "microsoftX=1,a=b")
	if r := decode(t, out); code != ExitInvalid || r.Valid || len(r.Problems) != 1 || r.Problems[0].Tag != "microsoftX" {
		t.Fatalf("azure: code %d, report %+v", code, r)
	}
	out, _, code = runValidateCmd(t, "-o", "json", "--rules", "aws", "--tags", "AWS:x=1")
	if r := decode(t, out); code != ExitInvalid || len(r.Problems) != 1 || r.Problems[0].Tag != "AWS:x" {
		t.Fatalf("aws: code %d, report %+v", code, r)
	}
}

func TestExitCode(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("plain"), 1},
		{&ExitError{Code: 2, Err: errors.New("x")}, 2},
		{fmt.Errorf("wrapped: %w", &ExitError{Code: 2, Err: errors.New("x")}), 2},
		{&ExitError{Code: ExitInvalid, Err: errors.New("x")}, 1},
	}
	for _, c := range cases {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// The examples of docs/validate.md.
func TestValidateDocExamples(t *testing.T) {
	out, _, code := runValidateCmd(t, "-f", writeFile(t, "tags.yaml", "env: \"a<b\"\nrange: \"x,y/z:1;2>0?\"\n"))
	if code != 0 || out != "valid: 2 tags\n" {
		t.Fatalf("range example: code %d, stdout %q", code, out)
	}
	userTags := writeFile(t, "tags.yaml", "Env: prod\nenv: dev\ncost-center: \"a<b\"\nowner-: team1\nName: web\napp: \"\"\n")
	_, errOut, code := runValidateCmd(t, "--cloud", "azure", "-f", userTags)
	if code != ExitInvalid || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "differ only in case") {
		t.Fatalf("azure example: code %d, stderr %q", code, errOut)
	}
	_, errOut, code = runValidateCmd(t, "-f", userTags)
	if code != ExitInvalid || strings.Count(errOut, "\n") != 4 {
		t.Fatalf("openshift example: code %d, stderr %q", code, errOut)
	}
}

// TestValidateWorkloadTagPolicy: a policy manifest is checked with the
// controller's own check against its provider's rules: a valid one
// passes; a creator's key, keys the cloud takes for one, a bad template
// and an AWS-reserved key are each a problem; a file that is no policy,
// or of an unknown cloud, exits unreadable.
func TestValidateWorkloadTagPolicy(t *testing.T) {
	policy := func(provider, tags string) string {
		return writeFile(t, "policy.yaml", "apiVersion: tagsync.io/v1alpha1\nkind: WorkloadTagPolicy\nmetadata:\n  name: p\nspec:\n  provider: "+
			provider+"\n  tags:\n"+tags)
	}
	out, _, code := runValidateCmd(t, "--workload-tag-policy", policy("azure", "  - {key: cost-center, value: \"${namespace.labels['cc']}\"}\n"))
	if code != 0 || out != "valid: 1 tag\n" {
		t.Errorf("a valid policy: code %d, %q", code, out)
	}
	_, errOut, code := runValidateCmd(t, "--workload-tag-policy", policy("azure",
		"  - {key: k8s-azure-created-by, value: me}\n  - {key: Env, value: a}\n  - {key: env, value: b}\n  - {key: t, value: \"${pod}\"}\n"))
	for _, want := range []string{"creator (the Azure cloud provider and the Azure CSI drivers)", `"env": the cloud takes it for the same tag as "Env"`, `"t": invalid value template`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}
	if code != ExitInvalid || strings.Count(errOut, "\n") != 3 {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
	_, errOut, code = runValidateCmd(t, "--workload-tag-policy", policy("aws", "  - {key: \"aws:x\", value: a}\n"))
	if code != ExitInvalid || !strings.Contains(errOut, "aws:") {
		t.Errorf("an aws: key on AWS: code %d, %q", code, errOut)
	}
	for _, bad := range []string{policy("gcp", "  - {key: a, value: b}\n"), writeFile(t, "other.yaml", "kind: NodeTagSync\n"),
		writeFile(t, "typo.yaml", "kind: WorkloadTagPolicy\nspec:\n  tagz: []\n")} {
		if _, _, code := runValidateCmd(t, "--workload-tag-policy", bad); code != ExitUnreadable {
			t.Errorf("%s: code %d, want %d", bad, code, ExitUnreadable)
		}
	}
}
