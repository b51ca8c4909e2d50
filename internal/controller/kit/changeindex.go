package kit

import (
	"sync"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

// ChangeIndex is the one index every controller that takes cloud changes
// keeps: which of its objects (K) found each resource at their last full
// passes, the changes pending per object (Pending, with what they
// carried), and the changes that arrive before an object's index exists
// (Warmup: every start and leader change). Routing a change is the same
// for every controller: to each object that found the resource, except
// the one whose own write made it (cloudchange.Change.EchoOf), which knows
// the result. A controller adds only how it finds an object's resources
// (Add, Remove) and what it does with a change of a resource no object
// found (the node sync keeps it while indexes warm; metadata compares its
// tags with the objects' classifiers). Resources are canonical IDs. Safe
// for concurrent use.
type ChangeIndex[K comparable] struct {
	// Name is an object's name as Change.EchoOf gives it.
	Name func(K) string
	// Pending are the changes pending per object.
	Pending Pending[K]
	// Warm keeps the changes no object took while indexes warm.
	Warm Warmup[K]

	mu     sync.Mutex
	owners map[string]map[K]int // resource → object → how many of its parts found it
}

// Add records that one part of obj (a target; the node sync has one)
// found each of ids.
func (x *ChangeIndex[K]) Add(obj K, ids ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.owners == nil {
		x.owners = map[string]map[K]int{}
	}
	for _, id := range ids {
		if x.owners[id] == nil {
			x.owners[id] = map[K]int{}
		}
		x.owners[id][obj]++
	}
}

// Remove undoes an Add of ids for obj.
func (x *ChangeIndex[K]) Remove(obj K, ids ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range ids {
		if x.owners[id][obj]--; x.owners[id][obj] <= 0 {
			delete(x.owners[id], obj)
		}
		if len(x.owners[id]) == 0 {
			delete(x.owners, id)
		}
	}
}

// Found reports whether some object found resource id.
func (x *ChangeIndex[K]) Found(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.owners[id]) > 0
}

// Route makes c, a change of resource id, pending for every object that
// found id except the one whose own write made it, and returns them; found
// reports whether any object found id (the echo's writer included).
func (x *ChangeIndex[K]) Route(id string, c cloudchange.Change) (objs []K, found bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for obj := range x.owners[id] {
		if c.EchoOf != "" && x.Name(obj) == c.EchoOf {
			continue
		}
		x.Pending.AddChange(obj, id, c)
		objs = append(objs, obj)
	}
	return objs, len(x.owners[id]) > 0
}

// Forget drops what is pending and warming for obj, an object that is
// gone (the controller removes what it added).
func (x *ChangeIndex[K]) Forget(obj K) {
	x.Pending.Forget(obj)
	x.Warm.Forget(obj)
}

// Replay hands the changes held while indexes warmed to route, once obj's
// pass has indexed all its resources: route routes each again (and holds
// again, while some index still warms, those still nobody's).
func (x *ChangeIndex[K]) Replay(obj K, route func(cloudchange.Change)) {
	x.Warm.Indexed(obj)
	for _, c := range x.Warm.Replay() {
		route(c)
	}
}
