package tags

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Filter selects the tag names in scope with glob patterns (path.Match syntax:
// *, ?, [class], \ escapes), matched against the whole name, ignoring case
// exactly when the cloud's names are case-insensitive (the NameCase its
// methods take). A name is in scope when it matches some Include pattern (or
// Include is empty) and no Exclude pattern.
type Filter struct {
	// Include lists patterns of names in scope; empty means all names.
	Include []string
	// Exclude lists patterns of names out of scope; it overrides Include.
	Exclude []string
}

// Validate returns an error naming every malformed or empty pattern.
func (f Filter) Validate() error {
	var errs []error
	check := func(field string, patterns []string) {
		for i, p := range patterns {
			if err := validPattern(p); err != nil {
				errs = append(errs, fmt.Errorf("tag filter %s[%d] %q: %w", field, i, p, err))
			}
		}
	}
	check("include", f.Include)
	check("exclude", f.Exclude)
	return errors.Join(errs...)
}

func validPattern(p string) error {
	if p == "" {
		return errors.New("empty pattern; use * to match every name")
	}
	if _, err := path.Match(strings.ToLower(p), ""); err != nil {
		return fmt.Errorf("malformed pattern (see Go's path.Match): %w", err)
	}
	return nil
}

// Match reports whether name is in scope, ignoring case when nc is
// CaseInsensitive. A malformed Include pattern matches nothing and a malformed
// Exclude pattern matches everything, so a bad filter syncs less, never more;
// call Validate to report them.
func (f Filter) Match(nc NameCase, name string) bool {
	key := nc.Key(name)
	if len(f.Include) > 0 && !anyMatch(nc, f.Include, key, false) {
		return false
	}
	return !anyMatch(nc, f.Exclude, key, true)
}

func anyMatch(nc NameCase, patterns []string, key string, onError bool) bool {
	for _, p := range patterns {
		ok, err := path.Match(nc.Key(p), key)
		if err != nil {
			ok = onError
		}
		if ok {
			return true
		}
	}
	return false
}

// Apply returns the tags of s that are in scope (see Match); nil stays nil (so
// a nil MergeInput.Base keeps meaning "no history").
func (f Filter) Apply(nc NameCase, s Set) Set {
	if s == nil {
		return nil
	}
	out := Set{}
	for n, v := range s {
		if f.Match(nc, n) {
			out[n] = v
		}
	}
	return out
}

// ExcludesEverything reports whether the filter provably lets no name
// through when names are compared as nc says: an Exclude pattern made only of
// '*', or every Include pattern covered by an Exclude pattern (the same
// pattern, or a "prefix*" pattern whose prefix starts it, case aside under
// CaseInsensitive). It errs towards false: a filter it passes may still match
// little.
//
//	Filter{Exclude: []string{"*"}}                                  → true
//	Filter{Include: []string{"cost*"}, Exclude: []string{"cost*"}}  → true
//	Filter{Include: []string{"costcenter"}, Exclude: []string{"c*"}} → true
//	Filter{Include: []string{"cost*"}, Exclude: []string{"costc*"}} → false
//	Filter{Include: []string{"Env"}, Exclude: []string{"env"}}      → true under CaseInsensitive only
func (f Filter) ExcludesEverything(nc NameCase) bool {
	for _, q := range f.Exclude {
		if q != "" && strings.Trim(q, "*") == "" {
			return true
		}
	}
	if len(f.Include) == 0 {
		return false
	}
	for _, p := range f.Include {
		if !anyCovers(nc, f.Exclude, p) {
			return false
		}
	}
	return true
}

// anyCovers reports whether some pattern in qs matches every name p matches.
func anyCovers(nc NameCase, qs []string, p string) bool {
	lp := nc.Key(p)
	for _, q := range qs {
		lq := nc.Key(q)
		if lq == lp {
			return true
		}
		prefix, star := strings.CutSuffix(lq, "*")
		if star && !strings.ContainsAny(prefix, `*?[\`) && strings.HasPrefix(lp, prefix) {
			return true
		}
	}
	return false
}
