package tags

import (
	"sort"
	"strings"
)

// TaintTagPrefix starts the name of every tag exported from a node taint
// (NodeTagSync's syncTaints): taint key "example.com/gpu" becomes tag
// "taint:example.com:gpu". Azure forbids "/" in tag names and taint keys never
// contain ":", so the mapping is one to one.
const TaintTagPrefix = "taint:"

// Taint is a node taint, as the Kubernetes API has it.
type Taint struct {
	Key, Value, Effect string
}

// TaintTags renders taints as tags: name TaintTagPrefix + key (with "/" as
// ":"), value "<value>:<effect>"; several effects on one key are joined with
// "," in sorted order. The result is deterministic.
func TaintTags(taints []Taint) Set {
	if len(taints) == 0 {
		return nil
	}
	byName := map[string][]string{}
	for _, t := range taints {
		name := TaintTagName(t.Key)
		byName[name] = append(byName[name], t.Value+":"+t.Effect)
	}
	out := Set{}
	for name, values := range byName {
		sort.Strings(values)
		out[name] = strings.Join(values, ",")
	}
	return out
}

// TaintTagName is the tag name for a taint key.
func TaintTagName(key string) string {
	return TaintTagPrefix + strings.ReplaceAll(key, "/", ":")
}

// IsTaintTag reports whether a tag name was exported from a taint: whether it
// starts with TaintTagPrefix, in any case when nc is CaseInsensitive.
func IsTaintTag(nc NameCase, name string) bool {
	return len(name) >= len(TaintTagPrefix) && nc.Key(name[:len(TaintTagPrefix)]) == TaintTagPrefix
}

// SplitTaintTags splits a set into its taint tags (see IsTaintTag) and the
// rest.
func SplitTaintTags(nc NameCase, s Set) (rest, taints Set) {
	for name, v := range s {
		if IsTaintTag(nc, name) {
			if taints == nil {
				taints = Set{}
			}
			taints[name] = v
			continue
		}
		if rest == nil {
			rest = Set{}
		}
		rest[name] = v
	}
	return rest, taints
}
