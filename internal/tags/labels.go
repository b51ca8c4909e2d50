package tags

import (
	"slices"
	"sort"
)

// LabelChanges is the minimal change to a Node's labels: keys to set (with
// their values) and keys to remove.
type LabelChanges struct {
	// Set holds label keys to create or update; nil when none.
	Set map[string]string
	// Delete holds label keys to remove, sorted; nil when none.
	Delete []string
}

// IsEmpty reports whether the changes change nothing.
func (l LabelChanges) IsEmpty() bool { return len(l.Set) == 0 && len(l.Delete) == 0 }

// Without returns the changes without those of keys.
func (l LabelChanges) Without(keys []string) LabelChanges {
	var out LabelChanges
	for k, v := range l.Set {
		if !slices.Contains(keys, k) {
			if out.Set == nil {
				out.Set = map[string]string{}
			}
			out.Set[k] = v
		}
	}
	for _, k := range l.Delete {
		if !slices.Contains(keys, k) {
			out.Delete = append(out.Delete, k)
		}
	}
	return out
}

// LabelChanges turns a NodePatch into changes to the given current labels.
// Names match managed labels as the codec's Rules compare names; when they are
// case-insensitive, a set replaces every managed label for the same tag under
// another spelling (a rename), and a delete removes them all. Labels that are not managed or do not decode are never touched.
// Entries that cannot be encoded are skipped and reported, and their old labels
// are left as they are.
func (c Codec) LabelChanges(labels map[string]string, p NodePatch) (LabelChanges, []Skipped) {
	nc := c.rules().NameCase()
	current := c.managedByKey(nc, labels)
	var out LabelChanges
	var skipped []Skipped
	for _, name := range p.Delete {
		out.Delete = append(out.Delete, current[nc.Key(name)]...)
	}
	for _, name := range p.Set.Names() {
		key, value, err := c.encodeLabel(name, p.Set[name])
		if err != nil {
			skipped = append(skipped, skip(name, key, p.Set[name], err))
			continue
		}
		out.setLabel(labels, current[nc.Key(name)], key, value)
	}
	out.Delete = dedupSorted(out.Delete)
	sortSkipped(skipped)
	return out, skipped
}

// setLabel records key=value, removing the other labels (olds) for the same tag.
func (l *LabelChanges) setLabel(labels map[string]string, olds []string, key, value string) {
	for _, old := range olds {
		if old != key {
			l.Delete = append(l.Delete, old)
		}
	}
	if cur, ok := labels[key]; ok && cur == value {
		return
	}
	if l.Set == nil {
		l.Set = map[string]string{}
	}
	l.Set[key] = value
}

func (c Codec) encodeLabel(name, value string) (key, labelValue string, err error) {
	key, err = c.LabelKey(name)
	if err != nil {
		return "", "", err
	}
	labelValue, err = EncodeValue(value)
	return key, labelValue, err
}

// managedByKey maps each tag Key to the managed label keys that decode to it.
func (c Codec) managedByKey(nc NameCase, labels map[string]string) map[string][]string {
	out := map[string][]string{}
	for lk := range labels {
		if name, managed, err := c.TagName(lk); managed && err == nil {
			out[nc.Key(name)] = append(out[nc.Key(name)], lk)
		}
	}
	return out
}

func dedupSorted(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	sort.Strings(s)
	out := s[:1]
	for _, v := range s[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}
