package tags

import (
	"errors"
	"fmt"
	"strings"
)

// Workload is what a value template may read about the Kubernetes object
// a cloud resource serves (a PersistentVolumeClaim for a disk): its kind,
// namespace, name, labels and annotations, and its namespace's labels and
// annotations.
type Workload struct {
	// Kind is the object's kind ("PersistentVolumeClaim").
	Kind string
	// Namespace and Name name the object.
	Namespace, Name string
	// Labels and Annotations are the object's own.
	Labels, Annotations map[string]string
	// NamespaceLabels and NamespaceAnnotations are its namespace's.
	NamespaceLabels, NamespaceAnnotations map[string]string
}

// Template is a tag value template: literal text with placeholders, each
// ${...}, replaced by what a Workload says. The placeholders are
//
//	${namespace}                     the object's namespace
//	${name}                          the object's name
//	${kind}                          the object's kind
//	${labels['team']}                a label of the object
//	${annotations['team']}           an annotation of the object
//	${namespace.labels['team']}      a label of its namespace
//	${namespace.annotations['team']} an annotation of its namespace
//
// A template renders nothing (Render's ok is false) when a placeholder
// names a label or annotation the object does not have, or when the result
// is empty: the tag is then not wanted on that resource. Build one with
// ParseTemplate.
type Template struct {
	parts []templatePart
	text  string
}

// templatePart is a literal or one placeholder.
type templatePart struct {
	lit string
	ref *templateRef
}

// templateRef is a placeholder: a field of the workload (namespace, name,
// kind) or a key of one of its maps.
type templateRef struct {
	field string // "namespace", "name", "kind", or a map: "labels", "namespace.annotations", ...
	key   string // the map's key
}

// ErrTemplate is the error kind of every template ParseTemplate refuses.
var ErrTemplate = errors.New("invalid value template")

// templateMaps are the maps a placeholder may index.
var templateMaps = []string{"labels", "annotations", "namespace.labels", "namespace.annotations"}

// ParseTemplate parses a value template (see Template). It refuses an
// unclosed ${, an unknown placeholder, and a map placeholder whose key is
// not quoted with single quotes or is empty.
//
//	ParseTemplate("${namespace.labels['cost-center']}") // a label of the namespace
//	ParseTemplate("${namespace}/${name}")               // "shop/data-db-0"
//	ParseTemplate("${labels[team]}")                    // error: quote the key: labels['team']
func ParseTemplate(s string) (Template, error) {
	t := Template{text: s}
	rest := s
	for rest != "" {
		i := strings.Index(rest, "${")
		if i < 0 {
			t.parts = append(t.parts, templatePart{lit: rest})
			break
		}
		if i > 0 {
			t.parts = append(t.parts, templatePart{lit: rest[:i]})
		}
		end := strings.Index(rest[i:], "}")
		if end < 0 {
			return Template{}, fmt.Errorf("%w %q: ${ at %d is not closed with }", ErrTemplate, s, len(s)-len(rest)+i)
		}
		ref, err := parseRef(rest[i+2 : i+end])
		if err != nil {
			return Template{}, fmt.Errorf("%w %q: %w", ErrTemplate, s, err)
		}
		t.parts = append(t.parts, templatePart{ref: ref})
		rest = rest[i+end+1:]
	}
	return t, nil
}

// parseRef parses what is between ${ and }.
func parseRef(s string) (*templateRef, error) {
	switch s {
	case "namespace", "name", "kind":
		return &templateRef{field: s}, nil
	}
	m, key, ok := strings.Cut(s, "[")
	if !ok {
		return nil, fmt.Errorf("unknown placeholder ${%s}: use namespace, name, kind, labels['k'], annotations['k'], namespace.labels['k'] or namespace.annotations['k']", s)
	}
	known := false
	for _, want := range templateMaps {
		known = known || m == want
	}
	if !known {
		return nil, fmt.Errorf("unknown placeholder ${%s}: a key can be read from %s", s, strings.Join(templateMaps, ", "))
	}
	if len(key) < 4 || key[0] != '\'' || !strings.HasSuffix(key, "']") || strings.Contains(key[1:len(key)-2], "'") {
		return nil, fmt.Errorf("placeholder ${%s}: quote the key with single quotes, as in %s['team']", s, m)
	}
	return &templateRef{field: m, key: key[1 : len(key)-2]}, nil
}

// String returns the template as written.
func (t Template) String() string { return t.text }

// Reads reports whether the template reads from the namespace (its
// name, labels or annotations) and from the object's own labels or
// annotations.
func (t Template) Reads() (namespace, object bool) {
	for _, p := range t.parts {
		if p.ref == nil {
			continue
		}
		namespace = namespace || strings.HasPrefix(p.ref.field, "namespace")
		object = object || p.ref.field == "labels" || p.ref.field == "annotations"
	}
	return namespace, object
}

// Render fills the template from w. ok is false when a placeholder names a
// key w lacks, or the result is empty.
//
//	w := Workload{Namespace: "shop", Name: "data-db-0",
//		NamespaceLabels: map[string]string{"cost-center": "cc-7"}}
//	t.Render(w) // "${namespace.labels['cost-center']}": "cc-7", true
//	            // "${labels['team']}": "", false (the claim has no team label)
func (t Template) Render(w Workload) (string, bool) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.ref == nil {
			b.WriteString(p.lit)
			continue
		}
		v, ok := p.ref.value(w)
		if !ok {
			return "", false
		}
		b.WriteString(v)
	}
	return b.String(), b.Len() > 0
}

// value is what the placeholder reads from w.
func (r *templateRef) value(w Workload) (string, bool) {
	var m map[string]string
	switch r.field {
	case "namespace":
		return w.Namespace, w.Namespace != ""
	case "name":
		return w.Name, w.Name != ""
	case "kind":
		return w.Kind, w.Kind != ""
	case "labels":
		m = w.Labels
	case "annotations":
		m = w.Annotations
	case "namespace.labels":
		m = w.NamespaceLabels
	case "namespace.annotations":
		m = w.NamespaceAnnotations
	}
	v, ok := m[r.key]
	return v, ok
}
