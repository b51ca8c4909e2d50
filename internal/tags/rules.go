package tags

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rules describes what a cloud accepts as tags on one resource, and how it
// compares tag names (CaseInsensitive).
type Rules struct {
	// MaxTags is the most tags one resource may carry; 0 or less means no limit.
	MaxTags int
	// MaxNameLen is the longest tag name, in UTF-16 code units (see Len), or in
	// Unicode characters when CountRunes is set; 0 or less means no limit.
	MaxNameLen int
	// MaxValueLen is the longest tag value, counted like MaxNameLen.
	MaxValueLen int
	// CountRunes says MaxNameLen and MaxValueLen count Unicode characters
	// (code points, as AWS does) rather than UTF-16 code units (as Azure
	// does).
	CountRunes bool
	// ForbiddenNameChars lists characters a tag name may not contain. Control
	// characters are always refused in names.
	ForbiddenNameChars string
	// AllowedPunctuation, when not empty, restricts tag names and values to
	// letters, digits and spaces (Unicode categories L, N and Z) and these
	// characters. Empty allows every character not refused otherwise.
	AllowedPunctuation string
	// NoLeadingDigit says a tag name may not start with a digit (Azure DNS
	// zones and Traffic Manager profiles).
	NoLeadingDigit bool
	// ReservedPrefixes lists name prefixes that belong to the platform
	// (compared case-insensitively, whatever CaseInsensitive says); tagsync
	// never writes such names.
	ReservedPrefixes []string
	// CaseInsensitive says the cloud treats names differing only in case as one
	// tag; NameCase turns it into the NameCase that Set, Merge, Aggregate and
	// Filter take, and Fit, Codec and ValidateSet (which then refuses such
	// pairs) follow it.
	CaseInsensitive bool
}

// NameCase returns how the cloud compares tag names: CaseInsensitive when
// r.CaseInsensitive is set, CaseSensitive otherwise.
func (r Rules) NameCase() NameCase { return NameCase(r.CaseInsensitive) }

// WithMaxNameLen returns r with names limited to n.
func (r Rules) WithMaxNameLen(n int) Rules {
	r.MaxNameLen = n
	return r
}

// Errors wrapped by TagError, for errors.Is.
var (
	// ErrEmptyName: a tag name is empty.
	ErrEmptyName = errors.New("empty tag name")
	// ErrInvalidUTF8: a tag name or value is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("not valid UTF-8")
	// ErrTooLong: a tag name or value exceeds its length limit.
	ErrTooLong = errors.New("too long")
	// ErrForbiddenChar: a tag name contains a forbidden or control character,
	// or a name or value a character outside Rules.AllowedPunctuation's set.
	ErrForbiddenChar = errors.New("forbidden character")
	// ErrReservedName: a tag name starts with a reserved prefix.
	ErrReservedName = errors.New("reserved tag name")
	// ErrDuplicateName: two tag names differ only in case.
	ErrDuplicateName = errors.New("duplicate tag name")
	// ErrTooManyTags: a set exceeds Rules.MaxTags.
	ErrTooManyTags = errors.New("too many tags")
)

// TagError says what is wrong with which tag. Err is one of the Err* values of
// this package.
type TagError struct {
	// Name is the tag name concerned; empty for set-wide problems.
	Name string
	// Err classifies the problem.
	Err error
	// Detail explains the problem in words.
	Detail string
}

// Error implements error.
func (e *TagError) Error() string {
	if e.Name == "" {
		return e.Detail
	}
	return fmt.Sprintf("tag %q: %s", e.Name, e.Detail)
}

// Unwrap returns Err.
func (e *TagError) Unwrap() error { return e.Err }

func tagErr(name string, err error, format string, args ...any) error {
	return &TagError{Name: name, Err: err, Detail: fmt.Sprintf(format, args...)}
}

// Len returns the length of s in UTF-16 code units, the unit .NET (and so
// Azure) counts in. It is never less than the number of runes.
func Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// ValidateName returns nil when the cloud accepts name as a tag name that
// tagsync may write, or a *TagError saying why not.
func (r Rules) ValidateName(name string) error {
	switch {
	case name == "":
		return tagErr(name, ErrEmptyName, "tag names must not be empty")
	case !utf8.ValidString(name):
		return tagErr(name, ErrInvalidUTF8, "name is not valid UTF-8")
	case r.MaxNameLen > 0 && r.length(name) > r.MaxNameLen:
		return tagErr(name, ErrTooLong, "name is %d characters long; the limit is %d", r.length(name), r.MaxNameLen)
	}
	if i := strings.IndexFunc(name, r.forbidden); i >= 0 {
		c, _ := utf8.DecodeRuneInString(name[i:])
		return tagErr(name, ErrForbiddenChar, "name contains the character %q; names may not contain control characters or any of %s",
			c, spaced(r.ForbiddenNameChars))
	}
	if c, ok := r.disallowed(name); ok {
		return tagErr(name, ErrForbiddenChar, "name contains the character %q; names may contain only letters, digits, spaces and %s",
			c, spaced(r.AllowedPunctuation))
	}
	if c, _ := utf8.DecodeRuneInString(name); r.NoLeadingDigit && unicode.IsDigit(c) {
		return tagErr(name, ErrForbiddenChar, "name starts with the digit %q; names on this resource type may not", c)
	}
	if p, ok := r.reservedPrefix(name); ok {
		return tagErr(name, ErrReservedName, "names starting with %q are reserved for the platform; rename the tag", p)
	}
	return nil
}

// ValidateValue returns nil when the cloud accepts value for the tag name, or a
// *TagError saying why not. Empty values are allowed.
func (r Rules) ValidateValue(name, value string) error {
	switch {
	case !utf8.ValidString(value):
		return tagErr(name, ErrInvalidUTF8, "value is not valid UTF-8")
	case r.MaxValueLen > 0 && r.length(value) > r.MaxValueLen:
		return tagErr(name, ErrTooLong, "value is %d characters long; the limit is %d", r.length(value), r.MaxValueLen)
	}
	if c, ok := r.disallowed(value); ok {
		return tagErr(name, ErrForbiddenChar, "value contains the character %q; values may contain only letters, digits, spaces and %s",
			c, spaced(r.AllowedPunctuation))
	}
	return nil
}

// ValidateSet checks every name and value in s, names differing only in case
// (when CaseInsensitive; otherwise they are different tags) and the number of
// tags. It returns nil or all problems joined (errors.Join), ordered by tag
// name.
func (r Rules) ValidateSet(s Set) error {
	var errs []error
	for _, n := range s.Names() {
		if err := r.ValidateName(n); err != nil {
			errs = append(errs, err)
		}
		if err := r.ValidateValue(n, s[n]); err != nil {
			errs = append(errs, err)
		}
	}
	nc := r.NameCase()
	for _, g := range s.Collisions(nc) {
		errs = append(errs, tagErr(g[0], ErrDuplicateName,
			"names %q differ only in case, and tag names are case-insensitive; keep one", g))
	}
	if n := len(s.index(nc)); r.MaxTags > 0 && n > r.MaxTags {
		errs = append(errs, tagErr("", ErrTooManyTags, "%d tags; a resource may carry at most %d", n, r.MaxTags))
	}
	return errors.Join(errs...)
}

// IsReservedName reports whether name starts with one of ReservedPrefixes,
// compared case-insensitively.
func (r Rules) IsReservedName(name string) bool {
	_, ok := r.reservedPrefix(name)
	return ok
}

func (r Rules) reservedPrefix(name string) (string, bool) {
	lower := strings.ToLower(name)
	for _, p := range r.ReservedPrefixes {
		if strings.HasPrefix(lower, strings.ToLower(p)) {
			return p, true
		}
	}
	return "", false
}

func (r Rules) forbidden(c rune) bool {
	return unicode.IsControl(c) || strings.ContainsRune(r.ForbiddenNameChars, c)
}

// disallowed returns the first character of s that AllowedPunctuation does not
// allow; ok is false when there is none (always when it is empty).
func (r Rules) disallowed(s string) (c rune, ok bool) {
	if r.AllowedPunctuation == "" {
		return 0, false
	}
	for _, c := range s {
		if !unicode.In(c, unicode.L, unicode.N, unicode.Z) && !strings.ContainsRune(r.AllowedPunctuation, c) {
			return c, true
		}
	}
	return 0, false
}

// length returns the length of s as r counts it (see CountRunes).
func (r Rules) length(s string) int {
	if r.CountRunes {
		return utf8.RuneCountInString(s)
	}
	return Len(s)
}

// spaced lists the characters of s separated by spaces.
func spaced(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Split(s, ""), " "), "   ", " space ")
}

// reservedLabelDomains are the label key prefixes Kubernetes reserves; their
// subdomains are reserved too.
var reservedLabelDomains = []string{"kubernetes.io", "k8s.io"}

// IsReservedLabelKey reports whether a label key (or a bare prefix followed by
// "/") lies under a prefix Kubernetes reserves: kubernetes.io/, k8s.io/ or any
// subdomain of them (such as node.kubernetes.io/). tagsync never writes such
// labels. Keys without a prefix are not reserved.
func IsReservedLabelKey(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	if !found {
		return false
	}
	prefix = strings.ToLower(prefix)
	for _, d := range reservedLabelDomains {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}

// sortSkipped orders skipped items by tag name, then label key.
func sortSkipped(s []Skipped) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Name != s[j].Name {
			return s[i].Name < s[j].Name
		}
		return s[i].Label < s[j].Label
	})
}
