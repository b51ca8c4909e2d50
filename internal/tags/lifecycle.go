package tags

import (
	"errors"
	"fmt"
	"sort"
)

// Opcode says what a metadata object does with its tags on the resources it
// classifies.
type Opcode string

const (
	// OpAdd writes tags that are absent and leaves a tag that holds another
	// value alone (reported as ErrTaken), unless the object wrote it there.
	OpAdd Opcode = "add"
	// OpUpdate writes tags, overwriting other values.
	OpUpdate Opcode = "update"
	// OpDelete removes tags; a non-empty value removes a tag only where it
	// has that value.
	OpDelete Opcode = "delete"
)

// LimitPolicy says what happens when a resource cannot take every new tag.
type LimitPolicy string

const (
	// LimitPartial adds new tags in name order while the resource has room
	// and reports the rest.
	LimitPartial LimitPolicy = "POLICY_APPLY_PARTIAL"
	// LimitStrict adds nothing to a resource that cannot take all new tags,
	// and reports it.
	LimitStrict LimitPolicy = "POLICY_APPLY_STRICT"
)

// ErrTaken: OpAdd found the tag on the resource with another value that the
// object did not write.
var ErrTaken = errors.New("tag holds another value")

// Lifecycle is one metadata object's intent for the tags of every resource
// it classifies. It is cloud-neutral: the resource's Rules say how names
// compare and what fits.
type Lifecycle struct {
	// Opcode is what to do with Tags.
	Opcode Opcode
	// Tags are the tags to add, update or delete. For OpDelete an empty
	// value deletes the tag whatever its value.
	Tags Set
	// Ignore lists names that are never read into decisions nor written.
	Ignore []string
	// Owned is the object's active tag list from its last pass: names it
	// keeps reconciled, so that an outside edit of one is reverted even
	// under OpAdd (where the resource also Held it).
	Owned Set
	// Limit is the limit policy; empty means LimitPartial.
	Limit LimitPolicy
}

// ResourcePlan is what a Lifecycle does to one resource.
type ResourcePlan struct {
	// Patch is what to write; empty when nothing changes.
	Patch Patch
	// Expect holds, for each name in Patch.Delete, the value it has now (a
	// cloud that can should delete only if it still has that value).
	Expect Set
	// Skipped are the tags not applied on this resource and why (errors.Is
	// with ErrTaken, ErrTooManyTags or a validation error), sorted by name.
	Skipped []Skipped
	// Held are the desired names the resource carries with the desired value
	// once Patch is written, sorted: under OpAdd these are the object's own
	// on this resource from then on (see Plan's held).
	Held []string
}

// InSync reports whether the resource needs no write and nothing was
// skipped on it.
func (p ResourcePlan) InSync() bool { return p.Patch.IsEmpty() && len(p.Skipped) == 0 }

// Plan computes what l does to a resource whose tags are current, under the
// resource's rules. held reports names the object is known to hold on this
// resource (written by it, or found with its value, in an earlier pass); nil
// means none. Names compare as rules.NameCase() says; Ignore'd names are
// neither read nor written. Per name:
//
//   - OpAdd: absent → set; same value → nothing; another value → set when
//     the name is Owned and held (an outside edit of the object's tag),
//     otherwise skipped with ErrTaken.
//   - OpUpdate: absent or another value → set.
//   - OpDelete: present, and the value matches or none is given → deleted
//     (with Expect); otherwise nothing.
//
// New names (absent ones) need room under rules.MaxTags: LimitPartial adds
// them in name order while there is room (Fit), LimitStrict adds none of
// them — and writes nothing at all to the resource — unless all fit. Names
// and values the resource's rules refuse are skipped.
func (l Lifecycle) Plan(current Set, rules Rules, held func(name string) bool) ResourcePlan {
	nc := rules.NameCase()
	visible := current.Without(nc, l.Ignore...)
	desired := l.Tags.Without(nc, l.Ignore...)
	if l.Opcode == OpDelete {
		return planDelete(nc, visible, desired)
	}
	var want Patch
	var skipped []Skipped
	for _, name := range desired.Names() {
		value := desired[name]
		have, ok := visible.Get(nc, name)
		switch {
		case ok && have == value:
		case !ok || l.Opcode == OpUpdate || l.owns(nc, name, held):
			want.put(name, value)
		default:
			skipped = append(skipped, skip(name, "", value, tagErr(name, ErrTaken,
				"not added: the resource has %s=%q, which this object did not write; use opcode update to overwrite it", name, have)))
		}
	}
	fitted, fitSkipped := Fit(current, want, rules)
	if l.Limit == LimitStrict && hasLimitSkip(fitSkipped) {
		fitted, fitSkipped = Patch{}, strictSkips(want, fitSkipped, rules.MaxTags)
	}
	skipped = append(skipped, fitSkipped...)
	sortSkipped(skipped)
	return ResourcePlan{Patch: fitted, Skipped: skipped, Held: heldAfter(nc, visible, desired, fitted)}
}

// owns reports whether an OpAdd object may overwrite name on this resource.
func (l Lifecycle) owns(nc NameCase, name string, held func(string) bool) bool {
	return l.Owned.Has(nc, name) && held != nil && held(name)
}

// planDelete plans OpDelete: every desired name present with a matching
// value (or any value when none is given) is deleted.
func planDelete(nc NameCase, visible, desired Set) ResourcePlan {
	var p ResourcePlan
	for _, name := range desired.Names() {
		spelling, have, ok := visible.Lookup(nc, name)
		if !ok || (desired[name] != "" && desired[name] != have) {
			continue
		}
		p.Patch.del(spelling)
		if p.Expect == nil {
			p.Expect = Set{}
		}
		p.Expect[spelling] = have
	}
	p.Patch.normalize()
	return p
}

// hasLimitSkip reports whether Fit skipped a tag for lack of room.
func hasLimitSkip(s []Skipped) bool {
	for _, sk := range s {
		if errors.Is(sk.Err, ErrTooManyTags) {
			return true
		}
	}
	return false
}

// strictSkips reports every tag of want as not written under LimitStrict,
// keeping Fit's reason for tags that were invalid anyway.
func strictSkips(want Patch, fitSkipped []Skipped, limit int) []Skipped {
	invalid := map[string]Skipped{}
	for _, sk := range fitSkipped {
		if !errors.Is(sk.Err, ErrTooManyTags) {
			invalid[sk.Name] = sk
		}
	}
	out := make([]Skipped, 0, len(want.Set))
	for _, name := range want.Set.Names() {
		if sk, ok := invalid[name]; ok {
			out = append(out, sk)
			continue
		}
		out = append(out, skip(name, "", want.Set[name], tagErr(name, ErrTooManyTags,
			"not written: the limit policy is %s and the resource cannot take every new tag within its limit of %d",
			LimitStrict, limit)))
	}
	return out
}

// heldAfter lists the desired names the resource carries with the desired
// value once fitted is written.
func heldAfter(nc NameCase, visible, desired Set, fitted Patch) []string {
	after := fitted.Apply(nc, visible)
	var out []string
	for _, name := range desired.Names() {
		if v, ok := after.Get(nc, name); ok && v == desired[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// String describes a plan briefly, for logs and tests.
func (p ResourcePlan) String() string {
	return fmt.Sprintf("set %v delete %v skipped %d", p.Patch.Set, p.Patch.Delete, len(p.Skipped))
}
