package tags

import "sort"

// Fit trims a CloudPatch so that writing it to a resource whose tags are
// current obeys rules: names and values that fail validation (including
// reserved names, which are never set or deleted) are skipped, operations that
// change nothing are dropped, and new tags are added in lexicographic (byte)
// order of their names only while the resource stays within rules.MaxTags;
// the rest are skipped. Updates and deletions never count against the limit.
// Skipped items are reported sorted by name. Names are matched as
// rules.NameCase() says. Use MergeResult.RestrictCloud with the fitted patch
// so the skipped keys are retried, not forgotten.
func Fit(current Set, patch CloudPatch, rules Rules) (CloudPatch, []Skipped) {
	nc := rules.NameCase()
	idx := current.index(nc)
	var out CloudPatch
	var skipped []Skipped
	deleted := fitDeletes(nc, idx, patch, rules, &out, &skipped)
	var adds []string
	for _, name := range patch.Set.Names() {
		value := patch.Set[name]
		if err := validTag(rules, name, value); err != nil {
			skipped = append(skipped, skip(name, "", value, err))
			continue
		}
		if deletes(nc, patch, name) {
			skipped = append(skipped, skip(name, "", value, tagErr(name, ErrDuplicateName, "the patch both sets and deletes this tag")))
			continue
		}
		if cur, ok := idx[nc.Key(name)]; ok {
			if current[cur] != value {
				out.put(name, value)
			}
			continue
		}
		adds = append(adds, name)
	}
	room := len(adds)
	if rules.MaxTags > 0 {
		room = rules.MaxTags - (len(idx) - deleted)
	}
	sort.Strings(adds)
	for i, name := range adds {
		if i < room {
			out.put(name, patch.Set[name])
			continue
		}
		skipped = append(skipped, skip(name, "", patch.Set[name], limitErr(name, rules.MaxTags)))
	}
	out.normalize()
	sortSkipped(skipped)
	return out, skipped
}

// fitDeletes copies the effective deletions of patch to out (under current's
// spelling) and returns how many tags they remove.
func fitDeletes(nc NameCase, idx map[string]string, patch CloudPatch, rules Rules, out *CloudPatch, skipped *[]Skipped) int {
	seen := map[string]bool{}
	for _, name := range patch.Delete {
		k := nc.Key(name)
		cur, ok := idx[k]
		switch {
		case rules.IsReservedName(name):
			*skipped = append(*skipped, skip(name, "", "", rules.ValidateName(name)))
		case patch.Set.Has(nc, name):
			*skipped = append(*skipped, skip(name, "", "", tagErr(name, ErrDuplicateName, "the patch both sets and deletes this tag")))
		case !ok || seen[k]:
		default:
			seen[k] = true
			out.del(cur)
		}
	}
	return len(seen)
}

func validTag(rules Rules, name, value string) error {
	if err := rules.ValidateName(name); err != nil {
		return err
	}
	return rules.ValidateValue(name, value)
}

func limitErr(name string, limit int) error {
	return tagErr(name, ErrTooManyTags,
		"not added: the resource would exceed its limit of %d tags (new tags are added in name order); remove unused tags", limit)
}

// deletes reports whether p deletes name (matched as nc says).
func deletes(nc NameCase, p Patch, name string) bool {
	for _, d := range p.Delete {
		if nc.Key(d) == nc.Key(name) {
			return true
		}
	}
	return false
}
