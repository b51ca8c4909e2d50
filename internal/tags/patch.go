package tags

import (
	"fmt"
	"slices"
	"sort"
)

// Patch is a set of changes to one side's tags: names to set and names to
// delete. It names only what changes; everything else stays as it is. Under
// CaseInsensitive, a name in Set whose spelling differs from the existing
// entry's is a rename: appliers replace the old spelling (see Apply and
// Codec.LabelChanges).
type Patch struct {
	// Set holds the names to create or update, with their new values; nil when none.
	Set Set
	// Delete holds the names to remove, sorted; nil when none.
	Delete []string
}

// CloudPatch is a Patch for the cloud resource's tags.
type CloudPatch = Patch

// NodePatch is a Patch for a Node's managed labels, expressed as tags (see
// Codec.LabelChanges for turning it into label changes).
type NodePatch = Patch

// IsEmpty reports whether p changes nothing.
func (p Patch) IsEmpty() bool { return len(p.Set) == 0 && len(p.Delete) == 0 }

// Key names the patch unambiguously: patches with equal keys make the
// same change, so one write can carry them. Names are taken as spelled;
// the order of Delete does not count.
//
//	Patch{Set: Set{"env": "prod"}, Delete: []string{"b", "a"}}.Key() == `map["env":"prod"] ["a" "b"]`
func (p Patch) Key() string {
	return fmt.Sprintf("%q %q", map[string]string(p.Set), slices.Sorted(slices.Values(p.Delete)))
}

// Apply returns a copy of s with p applied: deletions first, then sets; both
// match names as c says, and a set replaces every entry c takes for its name.
func (p Patch) Apply(c NameCase, s Set) Set {
	out := s.Clone()
	if out == nil {
		out = Set{}
	}
	for _, n := range p.Delete {
		out.Remove(c, n)
	}
	for n, v := range p.Set {
		out.Put(c, n, v)
	}
	return out
}

// Op returns what p does to name (matched as c says): set to value, or delete.
// ok is false when p does not touch name.
func (p Patch) Op(c NameCase, name string) (value string, del bool, ok bool) {
	if _, v, found := p.Set.Lookup(c, name); found {
		return v, false, true
	}
	k := c.Key(name)
	for _, d := range p.Delete {
		if c.Key(d) == k {
			return "", true, true
		}
	}
	return "", false, false
}

// put records a set operation.
func (p *Patch) put(name, value string) {
	if p.Set == nil {
		p.Set = Set{}
	}
	p.Set[name] = value
}

// del records a delete operation.
func (p *Patch) del(name string) { p.Delete = append(p.Delete, name) }

// normalize sorts Delete so output is deterministic.
func (p *Patch) normalize() { sort.Strings(p.Delete) }
