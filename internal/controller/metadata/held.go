package metadata

import (
	"crypto/sha256"
	"encoding/base64"
	"sort"
	"strings"
	"sync"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
)

// maxHeldGroups bounds status.held: resources past it (those of the
// rarest name sets) are left out of the record, so after a restart their
// edited tags are reported TagTaken rather than overwritten.
const maxHeldGroups = 64

// digestLen is how many bytes of a resource ID's SHA-256 status.held keeps:
// 48 bits, so that among 10,000 resources a digest taken for another's is
// about one chance in 28 billion, in 8 base64 characters.
const digestLen = 6

// digest identifies a resource in status.held.
type digest [digestLen]byte

// digestOf returns the digest of a resource ID (canonicalised first).
func digestOf(id string) digest {
	sum := sha256.Sum256([]byte(cloud.CanonicalID(id)))
	var d digest
	copy(d[:], sum[:])
	return d
}

// heldTags remembers, per resource (by cloud.CanonicalID), the requested
// tags the resource carried with the requested value after the last pass.
// Under opcode add only these may be rewritten after an outside edit: a tag
// that held another value before the object ever wrote it is not the
// object's. The record is kept in the object's status.held as well
// (record), and a new controller starts from there (heldFromStatus): until
// a pass has seen a resource again, its names come from that record.
type heldTags struct {
	mu     sync.Mutex
	res    map[string][]string // sorted names
	stored map[digest][]string // from status.held, until seen again
}

func newHeldTags() *heldTags { return &heldTags{res: map[string][]string{}} }

// heldFromStatus returns the held tags a status records.
func heldFromStatus(s v1alpha1.ProviderMetadataStatus) *heldTags {
	h := newHeldTags()
	h.stored = storedHeld(s.Held)
	return h
}

// storedHeld decodes status.held; a malformed entry is left out.
func storedHeld(groups []v1alpha1.HeldTags) map[digest][]string {
	out := map[digest][]string{}
	for _, g := range groups {
		raw, err := base64.StdEncoding.DecodeString(g.Digests)
		if err != nil || len(raw)%digestLen != 0 {
			continue
		}
		for i := 0; i < len(raw); i += digestLen {
			out[digest(raw[i:i+digestLen])] = g.Names
		}
	}
	return out
}

// HeldLookup returns, for tags.Lifecycle.Plan, the names an AzureMetadata's
// or AWSMetadata's status records it holding on each resource: what a
// controller started now would take as the object's own.
func HeldLookup(s v1alpha1.ProviderMetadataStatus) func(id string) func(string) bool {
	return heldFromStatus(s).lookup
}

// lookup returns the function tags.Lifecycle.Plan takes for one resource.
func (h *heldTags) lookup(id string) func(string) bool {
	h.mu.Lock()
	names, ok := h.res[cloud.CanonicalID(id)]
	if !ok {
		names = h.stored[digestOf(id)]
	}
	h.mu.Unlock()
	if len(names) == 0 {
		return nil
	}
	return func(n string) bool {
		for _, x := range names {
			if x == n {
				return true
			}
		}
		return false
	}
}

// replace records the names a resource holds now.
func (h *heldTags) replace(id string, names []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.stored, digestOf(id))
	if len(names) == 0 {
		delete(h.res, cloud.CanonicalID(id))
		return
	}
	h.res[cloud.CanonicalID(id)] = names
}

// keepOnly forgets every resource not in seen (out of scope, or deleted),
// so the record never outgrows the estate; what the stored record said of
// a seen resource not replaced (its write failed) is kept.
func (h *heldTags) keepOnly(seen map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range seen {
		if _, ok := h.res[id]; !ok {
			if names := h.stored[digestOf(id)]; len(names) > 0 {
				h.res[id] = names
			}
		}
	}
	h.stored = nil
	for id := range h.res {
		if !seen[id] {
			delete(h.res, id)
		}
	}
}

// record is the status.held form of the held tags, with the names of the
// resources in overlay (by ID) as given there: grouped by name set, the
// largest groups first, at most maxHeldGroups.
func (h *heldTags) record(overlay map[string][]string) []v1alpha1.HeldTags {
	h.mu.Lock()
	byDigest := make(map[digest][]string, len(h.res)+len(h.stored)+len(overlay))
	for d, names := range h.stored {
		byDigest[d] = names
	}
	for id, names := range h.res {
		byDigest[digestOf(id)] = names
	}
	h.mu.Unlock()
	for id, names := range overlay {
		byDigest[digestOf(id)] = names
	}
	return heldGroups(byDigest)
}

// heldGroups groups digests by name set into status.held entries.
func heldGroups(byDigest map[digest][]string) []v1alpha1.HeldTags {
	groups := map[string][]digest{}
	names := map[string][]string{}
	for d, n := range byDigest {
		if len(n) == 0 {
			continue
		}
		k := strings.Join(n, "\x00")
		groups[k] = append(groups[k], d)
		names[k] = n
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if a, b := len(groups[keys[i]]), len(groups[keys[j]]); a != b {
			return a > b
		}
		return keys[i] < keys[j]
	})
	if len(keys) > maxHeldGroups {
		keys = keys[:maxHeldGroups]
	}
	out := make([]v1alpha1.HeldTags, 0, len(keys))
	for _, k := range keys {
		ds := groups[k]
		sort.Slice(ds, func(i, j int) bool { return string(ds[i][:]) < string(ds[j][:]) })
		raw := make([]byte, 0, len(ds)*digestLen)
		for _, d := range ds {
			raw = append(raw, d[:]...)
		}
		out = append(out, v1alpha1.HeldTags{Names: names[k], Resources: int32(len(ds)), Digests: base64.StdEncoding.EncodeToString(raw)})
	}
	return out
}

// heldStatus is a target's status.held: the record under opcode add
// (where it decides what an outside edit may be reverted), else none.
func heldStatus(t *target, h *heldTags, overlay map[string][]string) []v1alpha1.HeldTags {
	if t.opcode != v1alpha1.OpcodeAdd {
		return nil
	}
	return h.record(overlay)
}

// heldFor returns the held-tags record of a target.
func (st *state) heldFor(t *target) *heldTags {
	h, ok := st.held[t.key()]
	if !ok {
		h = heldFromStatus(*t.status)
		st.held[t.key()] = h
	}
	return h
}

// keepHeld forgets the held-tags records of objects the CloudMetadata no
// longer references.
func (st *state) keepHeld(targets []*target) {
	keep := map[string]bool{}
	for _, t := range targets {
		keep[t.key()] = true
	}
	for k := range st.held {
		if !keep[k] {
			delete(st.held, k)
		}
	}
}

// seenIDs indexes resources by canonical ID.
func seenIDs(resources []cloud.Classified) map[string]bool {
	out := make(map[string]bool, len(resources))
	for _, r := range resources {
		out[cloud.CanonicalID(r.ID)] = true
	}
	return out
}
