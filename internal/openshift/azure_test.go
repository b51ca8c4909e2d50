package openshift

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tagsync/tagsync/internal/tags/tagstest"
)

// got is one problem as the tests compare it: the reason and the key ("" for
// problems of the whole map).
type got struct {
	Reason Reason
	Key    string
}

func (g got) String() string { return fmt.Sprintf("%s(%s)", g.Reason, g.Key) }

// problems flattens err into its FieldErrors, failing the test on anything
// else.
func problems(t *testing.T, err error) []got {
	t.Helper()
	var out []got
	for _, e := range unjoin(err) {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("problem %v (%T) is not a *FieldError", e, e)
		}
		out = append(out, got{fe.Reason, fe.Key})
	}
	return out
}

// tagsN returns n valid tags k00=v, k01=v, ...
func tagsN(n int) map[string]string { return tagstest.Numbered("k", n) }

func one(k, v string) map[string]string { return map[string]string{k: v} }

func TestValidateUserTags(t *testing.T) {
	key := func(k string) []got { return []got{{ReasonInvalidKey, k}} }
	val := func(k string) []got { return []got{{ReasonInvalidValue, k}} }
	restricted := func(k string) []got { return []got{{ReasonRestrictedKey, k}} }
	a := strings.Repeat
	cases := []struct {
		name string
		tags map[string]string
		want []got
	}{
		{"nil map", nil, nil},
		{"empty map", map[string]string{}, nil},
		{"one valid tag", one("env", "prod"), nil},

		// Count.
		{"10 tags", tagsN(10), nil},
		{"11 tags", tagsN(11), []got{{ReasonTooMany, ""}}},

		// Key length and shape.
		{"key of 1 letter", one("a", "v"), nil},
		{"key 128 chars", one("k"+a("x", 127), "v"), nil},
		{"key 129 chars", one("k"+a("x", 128), "v"), key("k" + a("x", 128))},
		{"empty key", one("", "v"), key("")},
		{"key starts with upper-case letter", one("Env", "v"), nil},
		{"key starts with digit", one("1env", "v"), key("1env")},
		{"key starts with underscore", one("_env", "v"), key("_env")},
		{"key starts with dash", one("-env", "v"), key("-env")},
		{"key starts with dot", one(".env", "v"), key(".env")},
		{"key ends with underscore", one("env_", "v"), nil},
		{"key ends with digit", one("env1", "v"), nil},
		{"key ends with dash", one("env-", "v"), key("env-")},
		{"key ends with dot", one("env.", "v"), key("env.")},
		{"key with . - _ inside", one("cost.center-a_b", "v"), nil},
		{"key with space", one("cost center", "v"), key("cost center")},
		{"key with slash", one("team/name", "v"), key("team/name")},
		{"key with colon", one("a:b", "v"), key("a:b")},
		{"key with non-ASCII letter", one("ümlaut", "v"), key("ümlaut")},

		// Value length and characters.
		{"value 1 char", one("env", "x"), nil},
		{"value 256 chars", one("env", a("v", 256)), nil},
		{"value 257 chars", one("env", a("v", 257)), val("env")},
		{"empty value", one("env", ""), val("env")},
		{"value with _ . =", one("env", "a_b.c=d"), nil},
		{"value with + - @", one("env", "a+b-c@d"), nil},
		// The +-@ range ('+'..'@') admits , / : ; < > ? and digits too.
		{"value a<b (the +-@ range)", one("env", "a<b"), nil},
		{"value with , / : ; > ?", one("env", "x,y/z:1;2>0?"), nil},
		{"value of range chars only", one("env", "+,-./:;<=>?@"), nil},
		{"value with space", one("env", "a b"), val("env")},
		{"value with *", one("env", "a*"), val("env")},
		{"value with * just below the range", one("env", "a*b"), val("env")},
		{"value with [", one("env", "a[b"), val("env")},
		{"value with non-ASCII", one("env", "café"), val("env")},
		{"value 256 range chars", one("env", a("<", 256)), nil},

		// Restricted keys, any case.
		{"key name", one("name", "v"), restricted("name")},
		{"key Name", one("Name", "v"), restricted("Name")},
		{"key NAME", one("NAME", "v"), restricted("NAME")},
		{"key names", one("names", "v"), nil},
		{"key Name_x", one("Name_x", "v"), nil},
		{"key myname", one("myname", "v"), nil},
		{"prefix kubernetes.io", one("kubernetes.io_x", "v"), restricted("kubernetes.io_x")},
		{"prefix Kubernetes.IO", one("Kubernetes.IO-cluster", "v"), restricted("Kubernetes.IO-cluster")},
		{"kubernetes without .io", one("kubernetes-io", "v"), nil},
		{"prefix openshift.io", one("openshift.io", "v"), restricted("openshift.io")},
		{"prefix OpenShift.Io", one("OpenShift.Io.x", "v"), restricted("OpenShift.Io.x")},
		{"prefix microsoft", one("microsoft", "v"), restricted("microsoft")},
		{"prefix MicroSoft", one("MicroSoftThing", "v"), restricted("MicroSoftThing")},
		{"prefix azure", one("azure", "v"), restricted("azure")},
		{"prefix AZURE", one("AZURE-x", "v"), restricted("AZURE-x")},
		{"prefix windows", one("windows", "v"), restricted("windows")},
		{"prefix WinDows", one("WinDows_ver", "v"), restricted("WinDows_ver")},
		{"restricted word not at the start", one("my-azure", "v"), nil},

		// Only a key's first failing rule is reported: key, value, restricted.
		{"bad key and bad value: key only", one("1x", ""), key("1x")},
		{"restricted key and bad value: value only", one("azure", ""), val("azure")},
		{"restricted key with bad shape: key only", one("azure-", "v"), key("azure-")},

		// Case-duplicate keys.
		{"Env and env", map[string]string{"Env": "a", "env": "b"}, []got{{ReasonDuplicateKeys, ""}}},
		{"three spellings, one error", map[string]string{"Env": "a", "env": "b", "ENV": "c"}, []got{{ReasonDuplicateKeys, ""}}},
		{"two groups, one error", map[string]string{"Env": "a", "env": "b", "Team": "c", "team": "d"},
			[]got{{ReasonDuplicateKeys, ""}}},
		{"duplicates with bad entries: both reported", map[string]string{"X-": "a", "x-": "b"},
			[]got{{ReasonDuplicateKeys, ""}, {ReasonInvalidKey, "X-"}, {ReasonInvalidKey, "x-"}}},

		// Several problems together, set-wide first, then by key.
		{"everything at once", func() map[string]string {
			m := tagsN(9)
			m["Name"] = "web"
			m["app"] = ""
			m["owner-"] = "t"
			m["name"] = "x"
			return m
		}(), []got{
			{ReasonTooMany, ""}, {ReasonDuplicateKeys, ""},
			{ReasonRestrictedKey, "Name"}, {ReasonInvalidValue, "app"}, {ReasonRestrictedKey, "name"}, {ReasonInvalidKey, "owner-"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateUserTags(c.tags)
			if g := problems(t, err); !reflect.DeepEqual(g, c.want) {
				t.Fatalf("ValidateUserTags = %v, want %v\nerror: %v", g, c.want, err)
			}
			if (err == nil) != (len(c.want) == 0) {
				t.Fatalf("error %v, want problems %v", err, c.want)
			}
		})
	}
}

func TestValidateUserTagsMessages(t *testing.T) {
	err := ValidateUserTags(map[string]string{
		"Env": "prod", "env": "dev", "cost-center": "a<b", "owner-": "team1", "Name": "web", "app": "",
	})
	lines := strings.Split(err.Error(), "\n")
	want := []string{
		`platform.azure.userTags: Forbidden: found duplicate tag keys: "ENV" matches 2 keys: "Env", "env"`,
		`platform.azure.userTags[Name]: Invalid value: "web": key "Name" is restricted`,
		`platform.azure.userTags[app]: Invalid value: "": value must be 1 to 256 characters long`,
		`platform.azure.userTags[owner-]: Invalid value: "team1": key must begin with a letter`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
}

func TestValidateUserTagsRestrictedPrefixNamed(t *testing.T) {
	err := ValidateUserTags(one("AzureThing", "v"))
	if err == nil || !strings.Contains(err.Error(), `restricted prefix "Azure"`) {
		t.Fatalf("error %v does not name the prefix", err)
	}
}

func TestValidateUserTagsTooManyMessage(t *testing.T) {
	err := ValidateUserTags(tagsN(11))
	want := "platform.azure.userTags: Too many: 11: must have at most 10 items"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func TestValidateUserTagsDuplicateKeysListed(t *testing.T) {
	err := ValidateUserTags(map[string]string{"team": "a", "Env": "b", "TEAM": "c", "env": "d"})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Reason != ReasonDuplicateKeys {
		t.Fatalf("error %v is not a duplicate-keys error", err)
	}
	if want := []string{"Env", "TEAM", "env", "team"}; !reflect.DeepEqual(fe.Keys, want) {
		t.Fatalf("Keys = %q, want %q", fe.Keys, want)
	}
	if !strings.Contains(fe.Detail, `"ENV" matches 2 keys: "Env", "env"; "TEAM" matches 2 keys: "TEAM", "team"`) {
		t.Fatalf("detail %q", fe.Detail)
	}
}

// The installer compares keys with strings.ToTitle, so keys it would refuse
// anyway still count as duplicates, even non-ASCII ones.
func TestValidateUserTagsDuplicatesUseToTitle(t *testing.T) {
	g := problems(t, ValidateUserTags(map[string]string{"ǆ": "a", "ǅ": "b"}))
	want := []got{{ReasonDuplicateKeys, ""}, {ReasonInvalidKey, "ǅ"}, {ReasonInvalidKey, "ǆ"}}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("got %v, want %v", g, want)
	}
}

func TestValidateUserTagsQuotesUnprintableKeys(t *testing.T) {
	err := ValidateUserTags(one("a\nb", "v"))
	if err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q spans lines", err)
	}
	if !strings.HasPrefix(err.Error(), `platform.azure.userTags["a\nb"]`) {
		t.Fatalf("error %q", err)
	}
}

func TestValidateUserTagsDeterministic(t *testing.T) {
	m := map[string]string{"b-": "", "a-": "", "Name": "", "x": "", "X": "", "y y": "z"}
	first := ValidateUserTags(m).Error()
	for range 50 {
		if again := ValidateUserTags(m).Error(); again != first {
			t.Fatalf("order changed:\n%s\n---\n%s", first, again)
		}
	}
}
