package tags

import (
	"path"
	"strings"
	"testing"
)

func TestFilterMatch(t *testing.T) {
	tests := []struct {
		name   string
		filter Filter
		tag    string
		want   bool
	}{
		{"empty filter matches all", Filter{}, "anything", true},
		{"include glob", Filter{Include: []string{"cost-*"}}, "Cost-Center", true},
		{"include miss", Filter{Include: []string{"cost-*"}}, "env", false},
		{"include upper pattern", Filter{Include: []string{"ENV"}}, "env", true},
		{"exclude wins", Filter{Include: []string{"*"}, Exclude: []string{"aks-managed-*"}}, "aks-managed-pool", false},
		{"exclude only", Filter{Exclude: []string{"secret?"}}, "secret1", false},
		{"exclude miss", Filter{Exclude: []string{"secret?"}}, "secret12", true},
		{"class", Filter{Include: []string{"[a-c]*"}}, "Beta", true},
		{"space in name", Filter{Include: []string{"cost center"}}, "Cost Center", true},
		{"malformed include matches nothing", Filter{Include: []string{"["}}, "x", false},
		{"malformed exclude matches everything", Filter{Exclude: []string{"["}}, "x", false},
	}
	for _, tt := range tests {
		if got := tt.filter.Match(CaseInsensitive, tt.tag); got != tt.want {
			t.Errorf("%s: Match(%q) = %v", tt.name, tt.tag, got)
		}
	}
}

func TestFilterValidate(t *testing.T) {
	if err := (Filter{Include: []string{"*", "env"}, Exclude: []string{"a?c", `\*`}}).Validate(); err != nil {
		t.Errorf("valid filter: %v", err)
	}
	err := Filter{Include: []string{"ok", "["}, Exclude: []string{""}}.Validate()
	if err == nil || !strings.Contains(err.Error(), `include[1] "["`) || !strings.Contains(err.Error(), `exclude[0] ""`) {
		t.Errorf("Validate = %v", err)
	}
}

func TestFilterApply(t *testing.T) {
	f := Filter{Exclude: []string{"aks-*"}}
	if f.Apply(CaseInsensitive, nil) != nil {
		t.Error("Apply(nil) must stay nil")
	}
	got := f.Apply(CaseInsensitive, Set{"env": "a", "aks-managed": "b"})
	if !got.Equal(CaseInsensitive, Set{"env": "a"}) {
		t.Errorf("Apply = %v", got)
	}
}

func TestFilterExcludesEverything(t *testing.T) {
	cases := []struct {
		include, exclude []string
		want             bool
	}{
		{nil, nil, false},
		{nil, []string{"*"}, true},
		{nil, []string{"**"}, true},
		{[]string{"env"}, []string{"ENV"}, true},
		{[]string{"cost*"}, []string{"cost*"}, true},
		{[]string{"costcenter", "cost-*"}, []string{"cost*"}, true},
		{[]string{"costcenter", "env"}, []string{"cost*"}, false},
		{[]string{"cost*"}, []string{"costc*"}, false},
		{[]string{"c?st"}, []string{"c[o]*"}, false}, // not provable: said false
		{nil, []string{"cost*"}, false},
	}
	for _, c := range cases {
		f := Filter{Include: c.include, Exclude: c.exclude}
		if got := f.ExcludesEverything(CaseInsensitive); got != c.want {
			t.Errorf("include %v exclude %v: ExcludesEverything = %v, want %v", c.include, c.exclude, got, c.want)
		}
		if c.want {
			for _, name := range []string{"env", "cost", "costcenter", "cost-x", "a"} {
				if f.Match(CaseInsensitive, name) {
					t.Errorf("include %v exclude %v: said to exclude everything but matches %q", c.include, c.exclude, name)
				}
			}
		}
	}
}

func TestFilterSlashIsOrdinary(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"kubernetes.io/*", "kubernetes.io/cluster/demo", true},
		{"k8s.io/cluster-autoscaler/*", "k8s.io/cluster-autoscaler/node-template/label/team", true},
		{"eksctl.*", "eksctl.cluster.k8s.io/v1alpha1/cluster-name", true},
		{"a?b", "a/b", true},
		{"a[/]b", "a/b", true},
		{"a[^/]b", "a/b", false},
		{"kubernetes.io/*", "kubernetes.io", false},
		{"*/x", "a/b/x", true},
		{"*/x", "a/b/y", false},
	}
	for _, tt := range tests {
		if got := (Filter{Include: []string{tt.pattern}}).Match(CaseSensitive, tt.name); got != tt.want {
			t.Errorf("Match(%q) with include %q = %v, want %v", tt.name, tt.pattern, got, tt.want)
		}
	}
}

// TestGlobMatchAgreesWithPathMatch: on names without '/', the filter's glob
// answers as path.Match does.
func TestGlobMatchAgreesWithPathMatch(t *testing.T) {
	patterns := []string{"", "*", "**", "a*", "*a", "a*b", "a*b*c", "*a*", "?", "a?c", "??", "[abc]", "[^abc]", "[a-c]x",
		"[^a-c]*", `\*`, `a\?`, `[\]]`, `[\-a]`, "[日-本]", "日*", "*本", "a**b", "*?*", "ab[c-]", "[a-]"}
	names := []string{"", "a", "b", "ab", "abc", "aXbYc", "axc", "]", "-", "*", "?", "a?", "日本", "cx", "zz", "abab", "aab"}
	for _, p := range patterns {
		for _, n := range names {
			want, werr := path.Match(p, n)
			got, gerr := globMatch(p, n)
			if (werr != nil) != (gerr != nil) || (werr == nil && got != want) {
				t.Errorf("globMatch(%q, %q) = %v, %v; path.Match = %v, %v", p, n, got, gerr, want, werr)
			}
		}
	}
}
