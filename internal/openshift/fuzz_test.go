package openshift

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// tagsFromText turns fuzz input into a tag map: one tag per line, key and
// value split at the first '='.
func tagsFromText(s string) map[string]string {
	m := map[string]string{}
	if s == "" {
		return m
	}
	for _, line := range strings.Split(s, "\n") {
		k, v, _ := strings.Cut(line, "=")
		m[k] = v
	}
	return m
}

// Reference model of the Azure rules, written without regular expressions,
// to cross-check the installer's patterns.
func refAzureKeyOK(k string) bool {
	if len(k) < 1 || len(k) > 128 {
		return false
	}
	alnum := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	if c := k[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !alnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	last := k[len(k)-1]
	return alnum(last) || last == '_'
}

func refAzureValueOK(v string) bool {
	if len(v) < 1 || len(v) > 256 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		ok := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
			c == '_' || c == '.' || c == '=' || c >= '+' && c <= '@'
		if !ok {
			return false
		}
	}
	return true
}

func refAzureRestricted(k string) bool {
	l := strings.ToLower(k)
	if l == "name" {
		return true
	}
	for _, p := range []string{"kubernetes.io", "openshift.io", "microsoft", "azure", "windows"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

func FuzzValidateUserTags(f *testing.F) {
	for _, s := range []string{
		"", "env=prod", "Env=a\nenv=b", "name=x", "Names=x", "a<b=c", "env=a<b", "env=",
		"AZURE-x=1", "kubernetes.io_a=1", "_x=1", "x_=1", "x-=1", "1x=y", "k=" + strings.Repeat("v", 257),
		strings.Repeat("k", 129) + "=v", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk", "ǅ=1\nǆ=2", "\xff=\xfe", "k=a b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tags := tagsFromText(s)
		err := ValidateUserTags(tags)
		if again := ValidateUserTags(tags); (err == nil) != (again == nil) || err != nil && err.Error() != again.Error() {
			t.Fatalf("not deterministic: %v vs %v", err, again)
		}
		perKey := map[string]Reason{}
		setWide := map[Reason]bool{}
		for _, e := range unjoin(err) {
			var fe *FieldError
			if !errors.As(e, &fe) {
				t.Fatalf("%T is not a *FieldError", e)
			}
			if fe.Key == "" && (fe.Reason == ReasonTooMany || fe.Reason == ReasonDuplicateKeys) {
				setWide[fe.Reason] = true
				continue
			}
			if _, dup := perKey[fe.Key]; dup {
				t.Fatalf("two problems for key %q", fe.Key)
			}
			perKey[fe.Key] = fe.Reason
		}
		if setWide[ReasonTooMany] != (len(tags) > MaxAzureUserTags) {
			t.Fatalf("too-many reported %v for %d tags", setWide[ReasonTooMany], len(tags))
		}
		titled := map[string]int{}
		for k := range tags {
			titled[strings.ToTitle(k)]++
		}
		if setWide[ReasonDuplicateKeys] != (len(titled) < len(tags)) {
			t.Fatalf("duplicates reported %v, %d keys, %d distinct titled", setWide[ReasonDuplicateKeys], len(tags), len(titled))
		}
		for k, v := range tags {
			var want Reason
			switch {
			case !refAzureKeyOK(k):
				want = ReasonInvalidKey
			case !refAzureValueOK(v):
				want = ReasonInvalidValue
			case refAzureRestricted(k):
				want = ReasonRestrictedKey
			}
			if perKey[k] != want {
				t.Fatalf("key %q value %q: reason %q, reference model says %q", k, v, perKey[k], want)
			}
		}
		if err != nil && !utf8.ValidString(err.Error()) && utf8.ValidString(s) {
			t.Fatalf("message not valid UTF-8: %q", err)
		}
	})
}

func FuzzParseInstallConfig(f *testing.F) {
	for _, s := range []string{
		azureConfig,
		"",
		"platform:\n  aws:\n    userTags:\n      Name: x\n",
		"platform:\n  azure:\n    cloudName: AzureChinaCloud\n    userTags: {a: b}\n",
		"platform:\n  azure:\n    userTags:\n      a: x\n      a: y\n",
		"platform: {azure: {userTags: {n: yes, 1: 2, x: ~}}}",
		`{"platform":{"azure":{"userTags":{"a":"b"}}}}`,
		"a: &x [*x]",
		"platform: [",
		"---\nplatform: {}\n---\n",
		"platform:\n  azure:\n    userTags:\n      a: !!binary aGVsbG8=\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseInstallConfig(data)
		if err != nil {
			if c.Platform.Azure != nil || c.Platform.AWS != nil {
				t.Fatalf("error %v with a config %+v", err, c)
			}
			return
		}
		if c.Platform.Azure == nil && c.Platform.AWS == nil {
			t.Fatal("no error and no platform")
		}
		verr := c.Validate()
		if again := c.Validate(); (verr == nil) != (again == nil) || verr != nil && verr.Error() != again.Error() {
			t.Fatalf("not deterministic: %v vs %v", verr, again)
		}
		_ = c.UserTagCount()
	})
}
