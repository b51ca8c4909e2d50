package tags

import (
	"fmt"
	"reflect"
	"testing"
)

// set builds a Set from name, value pairs.
func set(kv ...string) Set {
	s := Set{}
	for i := 0; i+1 < len(kv); i += 2 {
		s[kv[i]] = kv[i+1]
	}
	return s
}

// sets builds a Patch that sets name, value pairs.
func sets(kv ...string) Patch { return Patch{Set: set(kv...)} }

// dels builds a Patch that deletes names.
func dels(names ...string) Patch { return Patch{Delete: names} }

// and combines two patches.
func (p Patch) and(o Patch) Patch {
	out := Patch{Set: p.Set.Clone(), Delete: append(append([]string(nil), p.Delete...), o.Delete...)}
	for n, v := range o.Set {
		if out.Set == nil {
			out.Set = Set{}
		}
		out.Set[n] = v
	}
	out.normalize()
	return out
}

// samePatch compares patches exactly (spelling included); nil and empty are equal.
func samePatch(a, b Patch) bool {
	return sameMap(a.Set, b.Set) && len(a.Delete) == len(b.Delete) && (len(a.Delete) == 0 || reflect.DeepEqual(a.Delete, b.Delete))
}

func sameMap(a, b Set) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(map[string]string(a), map[string]string(b))
}

func fmtPatch(p Patch) string {
	return fmt.Sprintf("{set %v del %v}", map[string]string(p.Set), p.Delete)
}

// conflictSummary renders conflicts as "name:winner".
func conflictSummary(cs []Conflict) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name+":"+c.Winner.String())
	}
	return out
}

func sameStrings(a, b []string) bool { return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b) }

func mustEqualPatch(t *testing.T, what string, got, want Patch) {
	t.Helper()
	if !samePatch(got, want) {
		t.Errorf("%s = %s, want %s", what, fmtPatch(got), fmtPatch(want))
	}
}
