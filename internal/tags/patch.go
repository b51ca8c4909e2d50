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

// Spelling says which spelling a set keeps when s already holds its name
// spelled otherwise (c CaseInsensitive; under CaseSensitive the two agree).
type Spelling int

const (
	// PatchSpelling renames: the patch's spelling replaces every entry c
	// takes for the name (Set.Put).
	PatchSpelling Spelling = iota
	// KeepSpelling changes only the value of the entry s holds
	// (Set.Lookup's), as a cloud that matches names without case does
	// (ARM's Merge): the cloud is never renamed.
	KeepSpelling
)

// Apply returns a copy of s with p applied, the patch's spelling winning
// (ApplySpelled with PatchSpelling).
func (p Patch) Apply(c NameCase, s Set) Set { return p.ApplySpelled(c, s, PatchSpelling) }

// ApplySpelled returns a copy of s with p applied (never nil): deletions
// first, then sets, both matching names as c says; a name both deleted and
// set is set. A set spells its name as sp says.
//
//	Patch{Set: Set{"env": "b"}}.ApplySpelled(CaseInsensitive, Set{"Env": "a"}, PatchSpelling) // {"env": "b"}
//	Patch{Set: Set{"env": "b"}}.ApplySpelled(CaseInsensitive, Set{"Env": "a"}, KeepSpelling)  // {"Env": "b"}
func (p Patch) ApplySpelled(c NameCase, s Set, sp Spelling) Set {
	out := s.Clone()
	if out == nil {
		out = Set{}
	}
	for _, n := range p.Delete {
		if !p.Set.Has(c, n) {
			out.Remove(c, n)
		}
	}
	for n, v := range p.Set {
		if sp == KeepSpelling {
			if spelling, _, ok := out.Lookup(c, n); ok {
				out[spelling] = v
				continue
			}
		}
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
