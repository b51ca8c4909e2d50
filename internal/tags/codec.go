package tags

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultPrefix is the default label prefix for synced tags.
const DefaultPrefix = "azure.tags"

// Codec maps tags to node labels and back: tag name=value is label
// <Prefix>/<EncodeName(name)>=<EncodeValue(value)>, or, with an empty Prefix,
// <EncodeName(name)>=<EncodeValue(value)>. The zero Codec (empty prefix, Azure
// rules) is usable; call Validate on configured values. Tag names are matched
// as its Rules' NameCase says.
type Codec struct {
	// Prefix is the label prefix that marks managed labels: a DNS-1123
	// subdomain, or empty for labels without a prefix.
	Prefix string
	// Rules decides which tag names and values can be synced, and whether
	// names differing only in case are one tag; nil means the zero Rules
	// (no limits, names case-sensitive): give the cloud's.
	Rules *Rules
}

// Skipped is a tag or label that could not be carried across, and why.
type Skipped struct {
	// Name is the tag name, when known.
	Name string
	// Label is the label key, when the item is or would be a label.
	Label string
	// Value is the tag value (or the raw label value if it did not decode).
	Value string
	// Reason says what is wrong, in words.
	Reason string
	// Err is the underlying error, for errors.Is (ErrUnrepresentable,
	// ErrUndecodable, ErrDuplicateName, ErrTooManyTags, or a TagError's Err).
	Err error
}

func skip(name, label, value string, err error) Skipped {
	return Skipped{Name: name, Label: label, Value: value, Reason: err.Error(), Err: err}
}

// SkippedNames returns the distinct, non-empty tag names in s, sorted: the
// names to pass as MergeInput.Hold.
func SkippedNames(s []Skipped) []string {
	seen := map[string]bool{}
	var out []string
	for _, sk := range s {
		if sk.Name != "" && !seen[sk.Name] {
			seen[sk.Name] = true
			out = append(out, sk.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Validate checks the prefix: empty, or a DNS-1123 subdomain of at most 253
// characters that Kubernetes does not reserve.
func (c Codec) Validate() error {
	if c.Prefix == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(c.Prefix); len(errs) > 0 {
		return fmt.Errorf("label prefix %q is invalid: %s", c.Prefix, strings.Join(errs, "; "))
	}
	if IsReservedLabelKey(c.Prefix + "/") {
		return fmt.Errorf("label prefix %q is reserved by Kubernetes (kubernetes.io, k8s.io and their subdomains); choose another, e.g. %q",
			c.Prefix, DefaultPrefix)
	}
	return nil
}

func (c Codec) rules() Rules {
	if c.Rules == nil {
		return Rules{}
	}
	return *c.Rules
}

// LabelKey returns the label key for a tag name, or an error wrapping
// ErrUnrepresentable.
func (c Codec) LabelKey(tagName string) (string, error) {
	enc, err := EncodeName(tagName)
	if err != nil {
		return "", err
	}
	key := c.join(enc)
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return "", fmt.Errorf("%w: label key %q for tag %q: %s", ErrUnrepresentable, key, tagName, strings.Join(errs, "; "))
	}
	return key, nil
}

// TagName maps a label key back to a tag name. managed is false (and err nil)
// for keys outside the codec's prefix; for managed keys that do not decode, err
// wraps ErrUndecodable.
func (c Codec) TagName(labelKey string) (name string, managed bool, err error) {
	part, ok := c.namePart(labelKey)
	if !ok {
		return "", false, nil
	}
	name, err = DecodeName(part)
	if err != nil {
		return "", true, fmt.Errorf("label %q: %w", labelKey, err)
	}
	return name, true, nil
}

// IsManaged reports whether a label key lies under the codec's prefix (with an
// empty prefix: has no prefix at all).
func (c Codec) IsManaged(labelKey string) bool {
	_, ok := c.namePart(labelKey)
	return ok
}

// Check returns nil when the tag name=value can be synced both ways: valid
// under the codec's Rules (not reserved, no forbidden characters, within the
// limits) and representable as a label. Otherwise it says why not.
func (c Codec) Check(name, value string) error {
	r := c.rules()
	if err := r.ValidateName(name); err != nil {
		return err
	}
	if err := r.ValidateValue(name, value); err != nil {
		return err
	}
	if _, err := c.LabelKey(name); err != nil {
		return fmt.Errorf("tag %q: %w", name, err)
	}
	if _, err := EncodeValue(value); err != nil {
		return fmt.Errorf("tag %q: %w", name, err)
	}
	return nil
}

// ToLabels encodes the tags in s as labels. Tags that fail Check, and names
// differing only in case when the Rules' names are case-insensitive, are
// skipped and reported (sorted); nothing is truncated. The map is never nil.
func (c Codec) ToLabels(s Set) (map[string]string, []Skipped) {
	labels := map[string]string{}
	var skipped []Skipped
	nc := c.rules().NameCase()
	dup := duplicateKeys(nc, s)
	for _, name := range s.Names() {
		value := s[name]
		if dup[nc.Key(name)] {
			skipped = append(skipped, skip(name, "", value, caseCollision(name)))
			continue
		}
		if err := c.Check(name, value); err != nil {
			skipped = append(skipped, skip(name, "", value, err))
			continue
		}
		key, _ := c.LabelKey(name)
		labels[key], _ = EncodeValue(value)
	}
	sortSkipped(skipped)
	return labels, skipped
}

// FromLabels decodes the managed labels (see IsManaged) into tags. Labels that
// do not decode, decode to tags that fail Check, or collide with another label
// on one tag name (names differing only in case, when the Rules' names are
// case-insensitive; all of them are skipped) are reported, sorted. Other
// labels are ignored. The Set is never nil.
func (c Codec) FromLabels(labels map[string]string) (Set, []Skipped) {
	nc := c.rules().NameCase()
	byKey := map[string][]string{} // tag Key -> label keys
	names := map[string]string{}   // label key -> tag name
	values := map[string]string{}  // label key -> tag value
	var skipped []Skipped
	for _, lk := range slices.Sorted(maps.Keys(labels)) {
		name, value, err := c.decodeLabel(lk, labels[lk])
		if err != nil {
			skipped = append(skipped, skip(name, lk, labels[lk], err))
			continue
		}
		if name == "" {
			continue // not managed
		}
		names[lk], values[lk] = name, value
		byKey[nc.Key(name)] = append(byKey[nc.Key(name)], lk)
	}
	set := Set{}
	for _, lks := range byKey {
		if len(lks) == 1 {
			set[names[lks[0]]] = values[lks[0]]
			continue
		}
		for _, lk := range lks {
			skipped = append(skipped, skip(names[lk], lk, values[lk], labelCollision(lks)))
		}
	}
	sortSkipped(skipped)
	return set, skipped
}

// decodeLabel decodes one label; name is empty for unmanaged labels.
func (c Codec) decodeLabel(key, raw string) (name, value string, err error) {
	name, managed, err := c.TagName(key)
	if !managed || err != nil {
		return "", "", err
	}
	value, err = DecodeValue(raw)
	if err != nil {
		return name, "", fmt.Errorf("label %q: %w", key, err)
	}
	return name, value, c.Check(name, value)
}

func (c Codec) join(namePart string) string {
	if c.Prefix == "" {
		return namePart
	}
	return c.Prefix + "/" + namePart
}

func (c Codec) namePart(key string) (string, bool) {
	if c.Prefix == "" {
		return key, !strings.Contains(key, "/")
	}
	p, n, found := strings.Cut(key, "/")
	return n, found && p == c.Prefix
}

func duplicateKeys(nc NameCase, s Set) map[string]bool {
	dup := map[string]bool{}
	for _, g := range s.Collisions(nc) {
		dup[nc.Key(g[0])] = true
	}
	return dup
}

func caseCollision(name string) error {
	return tagErr(name, ErrDuplicateName, "another tag name differs from it only in case; tag names are case-insensitive, keep one")
}

func labelCollision(all []string) error {
	return tagErr("", ErrDuplicateName, "labels %q name the same tag (tag names are case-insensitive); remove all but one of them", all)
}
