package cli

import (
	"strings"
	"testing"
)

// TestValidateCloud: --cloud azure|aws checks the cloud's rules,
// --openshift the installer's for that cloud; --rules still works, says it
// is deprecated, and cannot be mixed with them.
func TestValidateCloud(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"azure: valid", []string{"--cloud", "azure", "--tags", "env=prod,cost center=1,a="}, 0},
		{"azure: ';' in a value is fine", []string{"--cloud", "azure", "--tags", "env=a;b"}, 0},
		{"azure: reserved", []string{"--cloud", "azure", "--tags", "Azure-x=1"}, ExitInvalid},
		{"azure: case duplicates", []string{"--cloud", "azure", "--tags", "Env=a,env=b"}, ExitInvalid},
		{"aws: case variants", []string{"--cloud", "aws", "--tags", "Env=a,env=b"}, 0},
		{"aws: '<' refused", []string{"--cloud", "aws", "--tags", "env=a<b"}, ExitInvalid},
		{"aws: aws: reserved", []string{"--cloud", "aws", "--tags", "aws:x=1"}, ExitInvalid},
		{"openshift azure: name refused", []string{"--openshift", "--tags", "Name=x"}, ExitInvalid},
		{"openshift aws: name refused", []string{"--cloud", "aws", "--openshift", "--tags", "Name=x"}, ExitInvalid},
		{"openshift aws: '<' allowed (the +-@ range)", []string{"--cloud", "aws", "--openshift", "--tags", "env=a<b"}, 0},
		{"openshift aws: case variants", []string{"--cloud", "aws", "--openshift", "--tags", "Env=a,env=b"}, 0},
		{"unknown cloud", []string{"--cloud", "gcp", "--tags", "a=b"}, ExitUnreadable},
		{"--rules with --cloud", []string{"--rules", "aws", "--cloud", "aws", "--tags", "a=b"}, ExitUnreadable},
		{"--install-config with --cloud", []string{"--install-config", "x.yaml", "--cloud", "aws"}, ExitUnreadable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := runValidateCmd(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errOut)
			}
		})
	}
	out, errOut, code := runValidateCmd(t, "--rules", "aws", "--tags", "Env=a,env=b")
	if code != 0 || out != "valid: 2 tags\n" || !strings.Contains(errOut, "--rules is deprecated: use --cloud") {
		t.Fatalf("--rules aws: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
