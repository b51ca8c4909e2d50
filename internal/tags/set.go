package tags

import (
	"maps"
	"slices"
	"sort"
	"strings"
)

// NameCase says how a cloud compares tag names: CaseInsensitive when names
// differing only in case denote one tag (Azure: "Env" and "env" are the same
// tag), CaseSensitive when they denote two (AWS). Values are always compared
// exactly.
//
// Everything in this package that matches tag names takes a NameCase
// explicitly (Set's lookups, Patch, Merge, Aggregate, Filter) or reads it from
// the Rules it is given (Fit, Codec, Rules.ValidateSet). Get a cloud's from its
// Rules: rules.NameCase().
type NameCase bool

const (
	// CaseSensitive compares names byte for byte: "Env" and "env" are two tags.
	CaseSensitive NameCase = false
	// CaseInsensitive compares names ignoring (Unicode) case: "Env" and "env"
	// are one tag.
	CaseInsensitive NameCase = true
)

// Key returns the canonical form of a tag name: two names denote the same tag
// exactly when their Keys are equal. Under CaseInsensitive it is the name in
// lower case; under CaseSensitive, the name itself.
func (c NameCase) Key(name string) string {
	if c == CaseInsensitive {
		return strings.ToLower(name)
	}
	return name
}

// String returns "CaseInsensitive" or "CaseSensitive".
func (c NameCase) String() string {
	if c == CaseInsensitive {
		return "CaseInsensitive"
	}
	return "CaseSensitive"
}

// Set maps tag names to values. Whether names differing only in case are one
// tag is the cloud's NameCase, which every method that matches names takes;
// values are matched exactly. The map keys keep the spelling whoever wrote
// them used; nothing here normalises it.
//
// Under CaseInsensitive a valid Set never holds two names that differ only in
// case; Collisions finds them. Functions in this package that meet such a Set
// pick the spelling that sorts first, so their results stay deterministic.
//
// A nil Set and an empty Set hold the same tags; MergeInput.Base uses nil to mean
// "no history".
type Set map[string]string

// Lookup finds name as c matches names and returns the spelling stored in s
// and its value.
func (s Set) Lookup(c NameCase, name string) (spelling, value string, ok bool) {
	if v, found := s[name]; found {
		return name, v, true
	}
	if c == CaseSensitive {
		return "", "", false
	}
	k := c.Key(name)
	for n, v := range s {
		if c.Key(n) == k && (!ok || n < spelling) {
			spelling, value, ok = n, v, true
		}
	}
	return spelling, value, ok
}

// Get returns the value of name, matched as c says.
func (s Set) Get(c NameCase, name string) (string, bool) {
	_, v, ok := s.Lookup(c, name)
	return v, ok
}

// Has reports whether s holds name, matched as c says.
func (s Set) Has(c NameCase, name string) bool {
	_, _, ok := s.Lookup(c, name)
	return ok
}

// Names returns the names in s, sorted in byte order.
func (s Set) Names() []string {
	names := slices.AppendSeq(make([]string, 0, len(s)), maps.Keys(s))
	slices.Sort(names)
	return names
}

// Clone returns a copy of s; the clone of nil is nil.
func (s Set) Clone() Set {
	if s == nil {
		return nil
	}
	c := make(Set, len(s))
	for n, v := range s {
		c[n] = v
	}
	return c
}

// Equal reports whether s and o hold the same tags: the same names, matched as
// c says, each with exactly the same value. Under CaseInsensitive spelling is
// ignored.
func (s Set) Equal(c NameCase, o Set) bool {
	a, b := s.index(c), o.index(c)
	if len(a) != len(b) {
		return false
	}
	for k, n := range a {
		m, ok := b[k]
		if !ok || s[n] != o[m] {
			return false
		}
	}
	return true
}

// Collisions returns the groups of names in s that c takes for one tag (names
// differing only in case, under CaseInsensitive), each group sorted, groups
// sorted by their first name; nil when there are none, and always under
// CaseSensitive.
func (s Set) Collisions(c NameCase) [][]string {
	groups := map[string][]string{}
	for _, n := range s.Names() {
		groups[c.Key(n)] = append(groups[c.Key(n)], n)
	}
	var out [][]string
	for _, g := range groups {
		if len(g) > 1 {
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// Put sets name to value, replacing any entry c takes for the same tag (under
// CaseInsensitive, any spelling of it). s must not be nil.
func (s Set) Put(c NameCase, name, value string) {
	s.Remove(c, name)
	s[name] = value
}

// Remove deletes name and every entry c takes for the same tag.
func (s Set) Remove(c NameCase, name string) {
	if c == CaseSensitive {
		delete(s, name)
		return
	}
	k := c.Key(name)
	for n := range s {
		if c.Key(n) == k {
			delete(s, n)
		}
	}
}

// Without returns a copy of s without the given names (matched as c says);
// the result is nil when s is nil.
func (s Set) Without(c NameCase, names ...string) Set {
	out := s.Clone()
	for _, n := range names {
		out.Remove(c, n)
	}
	return out
}

// index maps each Key in s to the spelling that sorts first.
func (s Set) index(c NameCase) map[string]string {
	idx := make(map[string]string, len(s))
	for n := range s {
		k := c.Key(n)
		if cur, ok := idx[k]; !ok || n < cur {
			idx[k] = n
		}
	}
	return idx
}
