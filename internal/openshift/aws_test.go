package openshift

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tagsync/tagsync/internal/tags/tagstest"
)

func TestValidateAWSUserTags(t *testing.T) {
	key := func(k string) []got { return []got{{ReasonInvalidKey, k}} }
	val := func(k string) []got { return []got{{ReasonInvalidValue, k}} }
	restricted := func(k string) []got { return []got{{ReasonRestrictedKey, k}} }
	a := strings.Repeat
	awsN := func(n int) map[string]string { return tagstest.Numbered("k", n) }
	cases := []struct {
		name string
		tags map[string]string
		want []got
	}{
		{"nil", nil, nil},
		{"valid", map[string]string{"env": "prod", "team/name": "a b", "cost:center": "x=1+2@3"}, nil},
		{"25 tags", awsN(25), nil},
		{"26 tags", awsN(26), []got{{ReasonTooMany, ""}}},
		{"case variants are two tags", map[string]string{"Env": "a", "env": "b"}, nil},
		{"Name", one("Name", "v"), restricted("Name")},
		{"nAmE", one("nAmE", "v"), restricted("nAmE")},
		{"Name with an empty value: Name first", one("Name", ""), restricted("Name")},
		{"names", one("names", "v"), nil},
		{"key with *", one("a*", "v"), key("a*")},
		{"key with non-ASCII letter", one("ü", "v"), key("ü")},
		{"key with the +-@ range", one("a<b?", "v"), nil},
		{"key with Unicode space", one("a\u00a0b", "v"), nil},
		{"value with *", one("k", "a*"), val("k")},
		{"bad key and bad value: key", one("a*", "b*"), key("a*")},
		{"empty key", one("", "v"), key("")},
		{"key 128 bytes", one(a("k", 128), "v"), nil},
		{"key 129 bytes", one(a("k", 129), "v"), key(a("k", 129))},
		{"key of 43 three-byte spaces: 129 bytes", one(a("\u3000", 43), "v"), key(a("\u3000", 43))},
		{"empty value", one("k", ""), val("k")},
		{"value 256 bytes", one("k", a("v", 256)), nil},
		{"value 257 bytes", one("k", a("v", 257)), val("k")},
		{"kubernetes.io/ namespace", one("kubernetes.io/cluster/x", "owned"), restricted("kubernetes.io/cluster/x")},
		{"sub-domain of kubernetes.io", one("node.kubernetes.io/role", "v"), restricted("node.kubernetes.io/role")},
		{"kubernetesXio/ (unescaped dot)", one("kubernetesXio/a", "v"), restricted("kubernetesXio/a")},
		{"kubernetes.io without slash", one("kubernetes.io", "v"), nil},
		{"Kubernetes.io/ (case-sensitive)", one("Kubernetes.io/a", "v"), nil},
		{"openshift.io/ namespace", one("openshift.io/x", "v"), restricted("openshift.io/x")},
		{"sub-domain of openshift.io", one("a.openshift.io/x", "v"), restricted("a.openshift.io/x")},
		{"azure prefix is fine on AWS", one("azure", "v"), nil},
		{"several, by key", map[string]string{"z*": "v", "Name": "v", "a": ""},
			[]got{{ReasonRestrictedKey, "Name"}, {ReasonInvalidValue, "a"}, {ReasonInvalidKey, "z*"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateAWSUserTags(c.tags)
			if g := problems(t, err); !reflect.DeepEqual(g, c.want) {
				t.Fatalf("ValidateAWSUserTags = %v, want %v\nerror: %v", g, c.want, err)
			}
		})
	}
}

func TestValidateAWSUserTagsMessages(t *testing.T) {
	err := ValidateAWSUserTags(map[string]string{"kubernetes.io/cluster/a": "owned"})
	want := `platform.aws.userTags[kubernetes.io/cluster/a]: Invalid value: "owned": key is in the kubernetes.io namespace`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}
