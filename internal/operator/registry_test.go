package operator

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

func TestSelect(t *testing.T) {
	names := func(cs []Controller) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	for _, tc := range []struct{ in, want []string }{
		{nil, ControllerNames()},
		{[]string{"all"}, ControllerNames()},
		{[]string{"nodetags"}, []string{"nodetags"}},
		{[]string{"metadata"}, []string{"metadata"}},
		{[]string{"metadata", "nodetags"}, []string{"nodetags", "metadata"}},
	} {
		got, err := Select(tc.in)
		if err != nil || !slices.Equal(names(got), tc.want) {
			t.Fatalf("Select(%v) = %v, %v; want %v", tc.in, names(got), err, tc.want)
		}
	}
	_, err := Select([]string{"nodetags", "metdata"})
	if err == nil || !strings.Contains(err.Error(), `unknown controller "metdata"`) || !strings.Contains(err.Error(), "known: all, "+strings.Join(ControllerNames(), ", ")) {
		t.Fatalf("an unknown name gave %v, want an error that lists the known names", err)
	}
}

// TestCacheOptionsTrimOnlyWhenAllReadersAgree: a second controller that
// reads Nodes whole (e.g. their status) must not see them trimmed by the
// first one's transform.
func TestCacheOptionsTrimOnlyWhenAllReadersAgree(t *testing.T) {
	trim := Controllers()[0].Cache[0]
	same := Controller{Name: "same", Cache: []CacheNeed{trim}}
	whole := Controller{Name: "status-reader", Cache: []CacheNeed{{Object: &corev1.Node{}}}}
	other := Controller{Name: "other-trim", Cache: []CacheNeed{{Object: &corev1.Node{}, Trim: "other", Transform: trim.Transform}}}
	cases := []struct {
		name    string
		cs      []Controller
		trimmed bool
	}{
		{"nodetags alone", Controllers(), true},
		{"two readers, same trim", append(Controllers(), same), true},
		{"a reader that needs whole Nodes", append(Controllers(), whole), false},
		{"a reader with another trim", append(Controllers(), other), false},
	}
	for _, c := range cases {
		opts := CacheOptions(c.cs)
		trimmed := false
		for obj, by := range opts.ByObject {
			if _, ok := obj.(*corev1.Node); ok && by.Transform != nil {
				trimmed = true
			}
		}
		if trimmed != c.trimmed {
			t.Errorf("%s: Nodes trimmed = %v, want %v", c.name, trimmed, c.trimmed)
		}
		if opts.DefaultTransform == nil {
			t.Errorf("%s: managedFields are not stripped", c.name)
		}
	}
}

// TestGeneratedRoleCoversEveryController: config/rbac/role.yaml (from the
// kubebuilder markers, and copied by the chart) grants every rule a
// registered controller says it needs.
func TestGeneratedRoleCoversEveryController(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var granted []rbacv1.PolicyRule
	for _, doc := range strings.Split(string(raw), "\n---") {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind == "ClusterRole" {
			granted = append(granted, role.Rules...)
		}
	}
	for _, c := range Controllers() {
		for _, need := range c.RBAC {
			for _, verb := range need.Verbs {
				if !grants(granted, need.APIGroups[0], need.Resources[0], verb) {
					t.Errorf("controller %s needs %s %s/%s, which config/rbac/role.yaml does not grant", c.Name, verb, need.APIGroups[0], need.Resources[0])
				}
			}
		}
	}
}

func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
	})
}

// addrSource is a listener whose address a test sets.
type addrSource struct{ addr string }

func (a *addrSource) Addr() string { return a.addr }

// The webhook's readiness check fails until it listens.
func TestReadyOnlyOnceTheWebhookListens(t *testing.T) {
	src := &addrSource{}
	check := listening(src)
	if err := check(nil); err == nil {
		t.Fatal("ready before the webhook listens")
	}
	src.addr = "127.0.0.1:9443"
	if err := check(nil); err != nil {
		t.Fatalf("not ready once it listens: %v", err)
	}
}
