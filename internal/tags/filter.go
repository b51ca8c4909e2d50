package tags

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// Filter selects the tag names in scope with glob patterns (path.Match syntax:
// *, ?, [class], \ escapes, except that '/' is an ordinary character: tag
// names are not paths, so kubernetes.io/* matches kubernetes.io/cluster/demo),
// matched against the whole name, ignoring case exactly when the cloud's
// names are case-insensitive (the NameCase its methods take). A name is in
// scope when it matches some Include pattern (or Include is empty), no
// Exclude pattern, and no Platform pattern unless it also matches a
// PlatformOptIn pattern.
type Filter struct {
	// Include lists patterns of names in scope; empty means all names.
	Include []string
	// Exclude lists patterns of names out of scope; it overrides Include
	// and PlatformOptIn.
	Exclude []string
	// Platform lists patterns of names the platform owns (see
	// PlatformPatterns): out of scope, whatever Include says, unless
	// PlatformOptIn lets them in.
	Platform []string
	// PlatformOptIn lists patterns of Platform names a user asked to have
	// in scope anyway (still subject to Include and Exclude).
	PlatformOptIn []string
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
	check("platform", f.Platform)
	check("includePlatform", f.PlatformOptIn)
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
// CaseInsensitive. A malformed Include or PlatformOptIn pattern matches
// nothing and a malformed Exclude or Platform pattern matches everything, so
// a bad filter syncs less, never more; call Validate to report them.
func (f Filter) Match(nc NameCase, name string) bool {
	key := nc.Key(name)
	if len(f.Include) > 0 && !anyMatch(nc, f.Include, key, false) {
		return false
	}
	if anyMatch(nc, f.Exclude, key, true) {
		return false
	}
	return !anyMatch(nc, f.Platform, key, true) || anyMatch(nc, f.PlatformOptIn, key, false)
}

func anyMatch(nc NameCase, patterns []string, key string, onError bool) bool {
	for _, p := range patterns {
		ok, err := globMatch(nc.Key(p), key)
		if err != nil {
			ok = onError
		}
		if ok {
			return true
		}
	}
	return false
}

// globMatch reports whether name matches pattern, which has path.Match's
// syntax and its errors, but where '*', '?' and classes match '/' like any
// other character.
func globMatch(pattern, name string) (bool, error) {
	if _, err := path.Match(pattern, ""); err != nil { // path.Match checks the whole pattern
		return false, err
	}
	px, nx := 0, 0
	starPx, starNx := -1, 0 // the last '*' seen and where its match ends so far
	for px < len(pattern) || nx < len(name) {
		if px < len(pattern) {
			if pattern[px] == '*' {
				starPx, starNx = px, nx
				px++
				continue
			}
			if nx < len(name) {
				r, w := utf8.DecodeRuneInString(name[nx:])
				if ok, n := matchOne(pattern[px:], r); ok {
					px, nx = px+n, nx+w
					continue
				}
			}
		}
		if starPx >= 0 && starNx < len(name) { // let the last '*' take one more character
			_, w := utf8.DecodeRuneInString(name[starNx:])
			starNx += w
			px, nx = starPx+1, starNx
			continue
		}
		return false, nil
	}
	return true, nil
}

// matchOne matches r against the pattern element p starts with (not '*';
// p is well-formed) and returns whether it matched and the element's length.
func matchOne(p string, r rune) (bool, int) {
	switch p[0] {
	case '?':
		return true, 1
	case '[':
		return matchClass(p, r)
	case '\\':
		c, w := utf8.DecodeRuneInString(p[1:])
		return c == r, 1 + w
	}
	c, w := utf8.DecodeRuneInString(p)
	return c == r, w
}

// matchClass matches r against the class p starts with ("[...]", path.Match
// syntax: ^ negates, lo-hi ranges, \ escapes; well-formed) and returns
// whether it matched and the class's length.
func matchClass(p string, r rune) (bool, int) {
	i := 1
	negated := i < len(p) && p[i] == '^'
	if negated {
		i++
	}
	matched := false
	for n := 0; ; n++ {
		if p[i] == ']' && n > 0 {
			i++
			break
		}
		lo, w := classChar(p[i:])
		i += w
		hi := lo
		if p[i] == '-' {
			hi, w = classChar(p[i+1:])
			i += 1 + w
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
	return matched != negated, i
}

// classChar is the character a class element starts with (escaped or not)
// and its length.
func classChar(p string) (rune, int) {
	if p[0] == '\\' {
		c, w := utf8.DecodeRuneInString(p[1:])
		return c, 1 + w
	}
	return utf8.DecodeRuneInString(p)
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
// CaseInsensitive) or, when PlatformOptIn is empty, by a Platform pattern.
// It errs towards false: a filter it passes may still match little.
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
		if !anyCovers(nc, f.Exclude, p) && (len(f.PlatformOptIn) > 0 || !anyCovers(nc, f.Platform, p)) {
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
