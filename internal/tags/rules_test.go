package tags

import (
	"errors"
	"strings"
	"testing"
)

// errCase is a name or value and the error (nil: none) validating it gives.
type errCase struct {
	in   string
	want error
}

// checkNames validates each case's name under rules; a failure must be a
// *TagError naming the tag.
func checkNames(t *testing.T, rules Rules, cases []errCase) {
	t.Helper()
	for _, tt := range cases {
		err := rules.ValidateName(tt.in)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("ValidateName(%.20q) = %v, want %v", tt.in, err, tt.want)
		}
		var te *TagError
		if err != nil && (!errors.As(err, &te) || te.Name != tt.in || !strings.Contains(err.Error(), "tag ")) {
			t.Errorf("ValidateName(%.20q) error %q does not name the tag", tt.in, err)
		}
	}
}

// checkValues validates each case's value (of tag "env") under rules.
func checkValues(t *testing.T, rules Rules, cases []errCase) {
	t.Helper()
	for _, tt := range cases {
		err := rules.ValidateValue("env", tt.in)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("ValidateValue(%.20q) = %v, want %v", tt.in, err, tt.want)
		}
	}
}

func TestValidateName(t *testing.T) {
	checkNames(t, AzureRules, []errCase{
		{"env", nil},
		{"Cost Center", nil},
		{"a:b", nil},
		{"日本", nil},
		{"", ErrEmptyName},
		{"a\xff", ErrInvalidUTF8},
		{strings.Repeat("n", 512), nil},
		{strings.Repeat("n", 513), ErrTooLong},
		{strings.Repeat("🙂", 256), nil},        // 512 UTF-16 units
		{strings.Repeat("🙂", 257), ErrTooLong}, // 514 UTF-16 units
		{"a<b", ErrForbiddenChar},
		{"a>b", ErrForbiddenChar},
		{"50%", ErrForbiddenChar},
		{"a&b", ErrForbiddenChar},
		{`a\b`, ErrForbiddenChar},
		{"what?", ErrForbiddenChar},
		{"a/b", ErrForbiddenChar},
		{"tab\there", ErrForbiddenChar},
		{"microsoft.team", ErrReservedName},
		{"Azure-DevOps", ErrReservedName},
		{"WINDOWS", ErrReservedName},
		{"my-azure", nil},
	})
	if err := AzureStorageRules.ValidateName(strings.Repeat("n", 129)); !errors.Is(err, ErrTooLong) {
		t.Errorf("storage rules: %v", err)
	}
	if !AzureRules.IsReservedName("MicrosoftX") || AzureRules.IsReservedName("env") {
		t.Error("IsReservedName")
	}
}

func TestValidateValue(t *testing.T) {
	checkValues(t, AzureRules, []errCase{
		{"", nil},
		{"a b/c:d?e", nil},
		{strings.Repeat("v", 256), nil},
		{strings.Repeat("v", 257), ErrTooLong},
		{"\xff", ErrInvalidUTF8},
	})
}

func TestValidateSet(t *testing.T) {
	if err := AzureRules.ValidateSet(Set{"env": "prod", "team": ""}); err != nil {
		t.Errorf("valid set: %v", err)
	}
	err := AzureRules.ValidateSet(Set{"Env": "a", "env": "b", "a/b": "x", "v": strings.Repeat("v", 300)})
	for _, want := range []error{ErrDuplicateName, ErrForbiddenChar, ErrTooLong} {
		if !errors.Is(err, want) {
			t.Errorf("ValidateSet error %v lacks %v", err, want)
		}
	}
	big := Set{}
	for i := 0; i < 51; i++ {
		big[strings.Repeat("x", i+1)] = ""
	}
	if err := AzureRules.ValidateSet(big); !errors.Is(err, ErrTooManyTags) || !strings.Contains(err.Error(), "51 tags") {
		t.Errorf("51 tags: %v", err)
	}
	if err := (Rules{}).ValidateSet(big); err != nil {
		t.Errorf("zero Rules limit nothing but names: %v", err)
	}
}

func TestIsReservedLabelKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"kubernetes.io/hostname", true},
		{"k8s.io/x", true},
		{"node.kubernetes.io/instance-type", true},
		{"node-restriction.kubernetes.io/x", true},
		{"foo.k8s.io/x", true},
		{"Kubernetes.IO/x", true},
		{"kubernetes.azure.com/agentpool", false},
		{"mykubernetes.io/x", false},
		{"azure.tags/env", false},
		{"env", false},
		{"kubernetes.io", false},
	}
	for _, tt := range tests {
		if got := IsReservedLabelKey(tt.key); got != tt.want {
			t.Errorf("IsReservedLabelKey(%q) = %v", tt.key, got)
		}
	}
}

func TestLen(t *testing.T) {
	if Len("abc") != 3 || Len("é") != 1 || Len("🙂") != 2 {
		t.Error("Len")
	}
}
