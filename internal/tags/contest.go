package tags

import (
	"errors"
	"slices"
)

// ErrContested: another object wants another value for the tag on the same
// resource, so neither writes it (see Lifecycle.Contested).
var ErrContested = errors.New("tag contested by another object")

// Contested returns the names of l's tags that other wants otherwise on a
// resource both classify, sorted, in l's spelling; names compare as nc says
// and names either ignores are left out. Two objects contest a name when:
//
//   - both write it (add or update) with different values;
//   - one deletes it and the other writes the value the delete removes (a
//     delete with an empty value removes any value).
//
// Two deletes, and two writes of the same value, contest nothing: whichever
// writes first, the other then finds the resource as it wants it.
func (l Lifecycle) Contested(nc NameCase, other Lifecycle) []string {
	mine := l.Tags.Without(nc, l.Ignore...).Without(nc, other.Ignore...)
	theirs := other.Tags.Without(nc, other.Ignore...)
	var out []string
	for _, name := range mine.Names() {
		v, ok := theirs.Get(nc, name)
		if ok && contests(l.Opcode, mine[name], other.Opcode, v) {
			out = append(out, name)
		}
	}
	return out
}

// contests reports whether two objects' wishes for one name fight.
func contests(opA Opcode, a string, opB Opcode, b string) bool {
	switch {
	case opA == OpDelete && opB == OpDelete:
		return false
	case opA == OpDelete:
		return a == "" || a == b
	case opB == OpDelete:
		return b == "" || b == a
	}
	return a != b
}

// Yield returns the plan of l on a resource where the names given are
// contested: they are neither read nor written, and each is reported as
// skipped with ErrContested.
func (l Lifecycle) Yield(current Set, rules Rules, held func(string) bool, contested []string) ResourcePlan {
	if len(contested) == 0 {
		return l.Plan(current, rules, held)
	}
	y := l
	y.Ignore = append(slices.Clone(l.Ignore), contested...)
	p := y.Plan(current, rules, held)
	for _, name := range contested {
		p.Skipped = append(p.Skipped, skip(name, "", l.Tags[name], tagErr(name, ErrContested,
			"not written: another object wants another value for %s on this resource (see the Conflict condition)", name)))
	}
	sortSkipped(p.Skipped)
	return p
}
