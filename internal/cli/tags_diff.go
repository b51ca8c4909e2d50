package cli

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// specDiff describes the change from one request to another, one line per
// field or tag: "  opcode: add -> delete", "+ env=prod", "~ env: dev -> prod",
// "- env=dev (released)", "+ ignore created-by", "- ignore created-by".
func specDiff(before, after providerSpec) []string {
	var out []string
	if *before.opcode != *after.opcode {
		out = append(out, fmt.Sprintf("  opcode: %s -> %s", *before.opcode, *after.opcode))
	}
	b, a := *before.tags, *after.tags
	for _, k := range sortedKeys(union(b, a)) {
		old, had := b[k]
		nv, has := a[k]
		switch {
		case had && !has:
			out = append(out, fmt.Sprintf("- %s=%s (released: it stays on the resources as it is)", k, shown(old, *before.opcode)))
		case !had && has:
			out = append(out, fmt.Sprintf("+ %s=%s", k, shown(nv, *after.opcode)))
		case old != nv:
			out = append(out, fmt.Sprintf("~ %s: %s -> %s", k, shown(old, *before.opcode), shown(nv, *after.opcode)))
		}
	}
	for _, n := range *before.ignore {
		if !slices.Contains(*after.ignore, n) {
			out = append(out, "- ignore "+n)
		}
	}
	for _, n := range *after.ignore {
		if !slices.Contains(*before.ignore, n) {
			out = append(out, "+ ignore "+n)
		}
	}
	return out
}

// shown renders a requested value: an empty one is "(any value)" under
// opcode delete, `""` otherwise.
func shown(v string, op v1alpha1.Opcode) string {
	switch {
	case v != "":
		return v
	case op == v1alpha1.OpcodeDelete:
		return "(any value)"
	}
	return `""`
}

// union returns a map with the keys of a and b.
func union(a, b map[string]string) map[string]string {
	u := map[string]string{}
	for k := range a {
		u[k] = ""
	}
	for k := range b {
		u[k] = ""
	}
	return u
}

// listNames returns the names of a list's items.
func listNames(list client.ObjectList) []string {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil
	}
	var names []string
	for _, o := range items {
		if m, err := meta.Accessor(o); err == nil {
			names = append(names, m.GetName())
		}
	}
	return names
}
