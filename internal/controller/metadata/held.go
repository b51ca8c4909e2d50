package metadata

import (
	"sync"

	"github.com/tagsync/tagsync/internal/cloud"
)

// heldTags remembers, per resource (by cloud.CanonicalID), the requested
// tags the resource carried with the requested value after the last pass.
// Under opcode add only these may be rewritten after an outside edit: a tag
// that held another value before the object ever wrote it is not the
// object's. The record lives in memory; after a restart a tag edited while
// the controller was down is reported (TagTaken), not overwritten.
type heldTags struct {
	mu  sync.Mutex
	res map[string][]string // sorted names
}

func newHeldTags() *heldTags { return &heldTags{res: map[string][]string{}} }

// lookup returns the function tags.Lifecycle.Plan takes for one resource.
func (h *heldTags) lookup(id string) func(string) bool {
	h.mu.Lock()
	names := h.res[cloud.CanonicalID(id)]
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
	if len(names) == 0 {
		delete(h.res, cloud.CanonicalID(id))
		return
	}
	h.res[cloud.CanonicalID(id)] = names
}

// keepOnly forgets every resource not in seen (out of scope, or deleted),
// so the record never outgrows the estate.
func (h *heldTags) keepOnly(seen map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.res {
		if !seen[id] {
			delete(h.res, id)
		}
	}
}
