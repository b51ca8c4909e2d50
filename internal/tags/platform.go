package tags

// PlatformKey is a tag key, or a family of keys, that the platform running
// the nodes (the managed Kubernetes service, its autoscalers, the tools that
// built the cluster) writes on the cloud resources behind nodes and depends
// on. Such a tag is not the user's: deleting or rewriting it breaks the
// platform (an instance Karpenter no longer recognises as its own leaks, a
// group without k8s.io/cluster-autoscaler/enabled is dropped by the
// autoscaler), and copying it into labels invites exactly that.
type PlatformKey struct {
	// Pattern matches the keys, in Filter syntax ("eks:*", or one exact
	// key), compared as the provider compares tag names.
	Pattern string
	// Owner is who writes the keys.
	Owner string
	// Why says what the owner uses them for.
	Why string
	// Source is where that is documented.
	Source string
}

// PlatformPatterns are the patterns of keys, for Filter.Platform.
func PlatformPatterns(keys []PlatformKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Pattern
	}
	return out
}

// IsPlatformKey reports whether name is one of keys (a cloud's platform
// keys), compared as nc says.
func IsPlatformKey(keys []PlatformKey, nc NameCase, name string) bool {
	return anyMatch(nc, PlatformPatterns(keys), nc.Key(name), false)
}

// OverlapsPlatform reports whether pattern may match some of keys (a
// cloud's platform keys): it errs towards true (a pattern it rejects
// provably matches none of them). It tells an includePlatformTags entry that
// opts nothing in.
func OverlapsPlatform(keys []PlatformKey, nc NameCase, pattern string) bool {
	p := nc.Key(pattern)
	lit := p
	if i := indexMeta(p); i >= 0 {
		lit = p[:i]
	}
	exact := len(lit) == len(p)
	for _, k := range keys {
		q := nc.Key(k.Pattern)
		prefix, star := cutStar(q)
		switch {
		case !star && exact:
			if p == q {
				return true
			}
		case !star: // an exact platform key, a pattern with wildcards
			if ok, err := globMatch(p, q); ok || err != nil {
				return true
			}
		case exact: // a prefix family, an exact name
			if len(p) >= len(prefix) && p[:len(prefix)] == prefix {
				return true
			}
		default: // both open: they overlap unless their literal prefixes diverge
			n := min(len(lit), len(prefix))
			if lit[:n] == prefix[:n] {
				return true
			}
		}
	}
	return false
}

// cutStar returns q without its final '*' and whether it had one that is
// its only wildcard.
func cutStar(q string) (string, bool) {
	if len(q) > 0 && q[len(q)-1] == '*' && indexMeta(q[:len(q)-1]) < 0 {
		return q[:len(q)-1], true
	}
	return q, false
}

// indexMeta is the index of the first glob metacharacter in p, or -1.
func indexMeta(p string) int {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?', '[', '\\':
			return i
		}
	}
	return -1
}
