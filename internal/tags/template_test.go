package tags

import (
	"errors"
	"strings"
	"testing"
)

func TestTemplateRender(t *testing.T) {
	w := Workload{Kind: "PersistentVolumeClaim", Namespace: "shop", Name: "data-db-0",
		Labels:               map[string]string{"team": "payments", "empty": ""},
		Annotations:          map[string]string{"owner": "ana"},
		NamespaceLabels:      map[string]string{"cost-center": "cc-7"},
		NamespaceAnnotations: map[string]string{"billing/code": "b-1"}}
	for _, tc := range []struct {
		tmpl, want string
		ok         bool
	}{
		{"${namespace.labels['cost-center']}", "cc-7", true},
		{"${namespace}/${name}", "shop/data-db-0", true},
		{"${kind}", "PersistentVolumeClaim", true},
		{"${labels['team']}", "payments", true},
		{"${annotations['owner']}", "ana", true},
		{"${namespace.annotations['billing/code']}", "b-1", true},
		{"prod", "prod", true},
		{"team-${labels['team']}-x", "team-payments-x", true},
		{"${labels['missing']}", "", false},
		{"a-${labels['missing']}", "", false},
		{"${labels['empty']}", "", false},
		{"", "", false},
	} {
		tmpl, err := ParseTemplate(tc.tmpl)
		if err != nil {
			t.Fatalf("%q: %v", tc.tmpl, err)
		}
		got, ok := tmpl.Render(w)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q rendered %q, %v; want %q, %v", tc.tmpl, got, ok, tc.want, tc.ok)
		}
		if tmpl.String() != tc.tmpl {
			t.Errorf("String() = %q, want %q", tmpl.String(), tc.tmpl)
		}
	}
}

func TestTemplateRefused(t *testing.T) {
	for tmpl, says := range map[string]string{
		"${namespace":            "not closed",
		"${pod}":                 "unknown placeholder",
		"${labels[team]}":        "quote the key",
		"${labels['']}":          "quote the key",
		"${labels['a'b']}":       "quote the key",
		"${owner.labels['a']}":   "unknown placeholder",
		"x ${namespace.labels}":  "unknown placeholder",
		"${namespace.name['a']}": "unknown placeholder",
	} {
		_, err := ParseTemplate(tmpl)
		if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v, want ErrTemplate saying %q", tmpl, err, says)
		}
	}
}

func TestTemplateReads(t *testing.T) {
	for tmpl, want := range map[string][2]bool{
		"prod":                           {false, false},
		"${namespace}":                   {true, false},
		"${namespace.labels['a']}":       {true, false},
		"${labels['a']}/${name}":         {false, true},
		"${annotations['a']}-${kind}":    {false, true},
		"${namespace}-${labels['team']}": {true, true},
	} {
		tm, err := ParseTemplate(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if ns, obj := tm.Reads(); ns != want[0] || obj != want[1] {
			t.Errorf("%q reads namespace %v, object %v; want %v", tmpl, ns, obj, want)
		}
	}
}
