package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// tagEdit is what one `tags` invocation changes in a provider object.
type tagEdit struct {
	// verb is add, update, delete or ignore.
	verb string
	// set are tags to put into resourceTags (for delete: "" means any value).
	set map[string]string
	// remove are tags to take out of resourceTags (KEY-), or, for ignore,
	// out of ignoreTags.
	remove []string
	// ignore are names to add to ignoreTags.
	ignore []string
	// replace makes set the whole of resourceTags.
	replace bool
}

// parseEdit reads the KEY=VALUE, KEY and KEY- arguments of verb.
func parseEdit(verb string, args []string, replace bool) (tagEdit, error) {
	e := tagEdit{verb: verb, set: map[string]string{}, replace: replace}
	seen := map[string]bool{}
	for _, a := range args {
		key, value, hasValue := strings.Cut(a, "=")
		removal := !hasValue && strings.HasSuffix(a, "-") && len(a) > 1
		if removal {
			key = strings.TrimSuffix(a, "-")
		}
		if key == "" {
			return e, fmt.Errorf("%q: a tag name is missing", a)
		}
		if seen[key] {
			return e, fmt.Errorf("tag %q is given more than once", key)
		}
		seen[key] = true
		switch {
		case removal:
			e.remove = append(e.remove, key)
		case verb == "ignore":
			if hasValue {
				return e, fmt.Errorf("%q: ignore takes tag names (KEY, or KEY- to stop ignoring), not values", a)
			}
			e.ignore = append(e.ignore, key)
		case !hasValue && verb != "delete":
			return e, fmt.Errorf("%q: %s takes KEY=VALUE (or KEY- to take a tag out of the request)", a, verb)
		default:
			e.set[key] = value
		}
	}
	if replace && verb == "ignore" {
		return e, fmt.Errorf("--replace applies to add, update and delete")
	}
	return e, nil
}

// apply changes the spec s points at. It refuses to change the opcode of a
// request that keeps other tags, unless the edit replaces them.
func (e tagEdit) apply(s providerSpec) error {
	if e.verb == "ignore" {
		e.applyIgnore(s)
		return nil
	}
	next := maps.Clone(*s.tags)
	if next == nil || e.replace {
		next = map[string]string{}
	}
	for _, k := range e.remove {
		delete(next, k)
	}
	maps.Copy(next, e.set)
	op := v1alpha1.Opcode(e.verb)
	if len(e.set) > 0 && *s.opcode != op {
		if others := e.kept(next); len(others) > 0 && *s.opcode != "" {
			return fmt.Errorf("its opcode is %s and it keeps %s; one object has one opcode: use --replace to make it %s %s only "+
				"(the other tags are released and stay on the resources as they are), or another object",
				*s.opcode, strings.Join(others, ", "), e.verb, strings.Join(slices.Sorted(maps.Keys(e.set)), ", "))
		}
		*s.opcode = op
	}
	if len(next) == 0 {
		next = nil
	}
	*s.tags = next
	return nil
}

// kept returns the tags of next this edit did not name.
func (e tagEdit) kept(next map[string]string) []string {
	var others []string
	for k := range next {
		if _, named := e.set[k]; !named {
			others = append(others, k)
		}
	}
	slices.Sort(others)
	return others
}

// applyIgnore adds and removes ignoreTags names.
func (e tagEdit) applyIgnore(s providerSpec) {
	next := slices.DeleteFunc(slices.Clone(*s.ignore), func(n string) bool { return slices.Contains(e.remove, n) })
	for _, n := range e.ignore {
		if !slices.Contains(next, n) {
			next = append(next, n)
		}
	}
	if len(next) == 0 {
		next = nil
	}
	*s.ignore = next
}
