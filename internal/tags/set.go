package tags

import (
	"sort"
	"strings"
)

// Set maps tag names to values. Names are matched case-insensitively (Azure tag
// names are case-insensitive) and values case-sensitively. The map keys keep the
// spelling whoever wrote them used; nothing here normalises it.
//
// A valid Set never holds two names that differ only in case; Collisions finds
// them. Functions in this package that meet such a Set pick the spelling that
// sorts first, so their results stay deterministic.
//
// A nil Set and an empty Set hold the same tags; MergeInput.Base uses nil to mean
// "no history".
type Set map[string]string

// Key returns the canonical form of a tag name: two names denote the same tag
// exactly when their Keys are equal.
func Key(name string) string { return strings.ToLower(name) }

// Lookup finds name case-insensitively and returns the spelling stored in s and
// its value.
func (s Set) Lookup(name string) (spelling, value string, ok bool) {
	if v, found := s[name]; found {
		return name, v, true
	}
	k := Key(name)
	for n, v := range s {
		if Key(n) == k && (!ok || n < spelling) {
			spelling, value, ok = n, v, true
		}
	}
	return spelling, value, ok
}

// Get returns the value of name, matched case-insensitively.
func (s Set) Get(name string) (string, bool) {
	_, v, ok := s.Lookup(name)
	return v, ok
}

// Has reports whether s holds name, matched case-insensitively.
func (s Set) Has(name string) bool {
	_, _, ok := s.Lookup(name)
	return ok
}

// Names returns the names in s, sorted in byte order.
func (s Set) Names() []string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
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

// Equal reports whether s and o hold the same tags: the same names compared
// case-insensitively, each with exactly the same value. Spelling is ignored.
func (s Set) Equal(o Set) bool {
	a, b := s.index(), o.index()
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

// Collisions returns the groups of names in s that differ only in case (each
// group sorted, groups sorted by their first name); nil when there are none.
func (s Set) Collisions() [][]string {
	groups := map[string][]string{}
	for _, n := range s.Names() {
		groups[Key(n)] = append(groups[Key(n)], n)
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

// Put sets name to value, replacing any entry whose name differs only in case.
// s must not be nil.
func (s Set) Put(name, value string) {
	s.Remove(name)
	s[name] = value
}

// Remove deletes name and every spelling of it.
func (s Set) Remove(name string) {
	k := Key(name)
	for n := range s {
		if Key(n) == k {
			delete(s, n)
		}
	}
}

// Without returns a copy of s without the given names (matched
// case-insensitively); the result is nil when s is nil.
func (s Set) Without(names ...string) Set {
	c := s.Clone()
	for _, n := range names {
		c.Remove(n)
	}
	return c
}

// index maps each Key in s to the spelling that sorts first.
func (s Set) index() map[string]string {
	idx := make(map[string]string, len(s))
	for n := range s {
		k := Key(n)
		if cur, ok := idx[k]; !ok || n < cur {
			idx[k] = n
		}
	}
	return idx
}
