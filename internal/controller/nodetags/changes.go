package nodetags

import (
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// Cloud changes (the events Hub) turn into targeted passes: the controller
// keeps an index from each resource to the NodeTagSyncs whose last full
// pass placed nodes on it; a change of an indexed resource remembers the
// resource for those NodeTagSyncs and enqueues them; their next pass reads
// only the changed resources (cloud.ReadOptions.Resources) and syncs only
// the nodes placed on them. A change that carries the resource's tags
// (AWS) spares the read (carried.go). Changes queued before the pass starts are
// coalesced into it. A change of a resource no NodeTagSync placed nodes on
// does nothing.
//
// A pass is full, not targeted, whenever anything but a change may have
// triggered it: the spec or a sync request changed, the resync interval
// passed, a Node changed since the last full pass, the hub overflowed, or
// the last full pass failed. A full pass with changes pending reads the
// cloud fresh.

// changeEvents is what the Reconciler needs to take cloud changes: the
// hub subscription (kit.Subscriber) and the change book.
type changeEvents struct {
	subscriber kit.Subscriber
	changes    *changeBook
}

// UseEvents makes the controller take hub's changes (kit.Subscriber.UseEvents).
func (e *changeEvents) UseEvents(hub *cloudchange.Hub) { e.subscriber.UseEvents(hub) }

// changeBook is the controller's index and the changes pending per
// NodeTagSync. It is safe for concurrent use.
type changeBook struct {
	mu sync.Mutex
	// owners are, per canonical resource ID, the NodeTagSyncs placed there.
	owners map[string]map[string]bool
	// placed are, per NodeTagSync, its last full pass's nodes per resource;
	// notes its placements' notes, per node that has one.
	placed map[string]map[string][]string
	notes  map[string]map[string]string
	// readAt is, per resource, when a pass last read or wrote it.
	readAt map[string]time.Time
	// pending are, per NodeTagSync, the resources changed since its last
	// pass started; flagged: its next full pass must read the cloud fresh
	// because changes were dropped (an overflow).
	pending kit.Pending[string]
	// epoch counts the events after which every NodeTagSync needs a full
	// pass (Node events, overflows).
	epoch uint64
}

func newChangeBook() *changeBook {
	return &changeBook{owners: map[string]map[string]bool{}, placed: map[string]map[string][]string{},
		notes: map[string]map[string]string{}, readAt: map[string]time.Time{}}
}

// ownerKey is the index key of a changed resource: its canonical ID, a
// Uniform scale set's instance mapped to its scale set.
func ownerKey(resource string) string {
	id := cloud.CanonicalID(resource)
	if i := strings.Index(id, "/virtualmachinescalesets/"); i >= 0 {
		if j := strings.Index(id[i:], "/virtualmachines/"); j >= 0 {
			return id[:i+j]
		}
	}
	return id
}

// route remembers a change for the NodeTagSyncs placed on its resource,
// except the one whose own write made it (Change.EchoOf), and returns
// their names. The tags a change carries are kept only when they are the
// indexed resource's own (not a scale set instance's).
func (b *changeBook) route(c cloudchange.Change) []string {
	id := ownerKey(c.Resource)
	if id != cloud.CanonicalID(c.Resource) {
		c.Tags = nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var names []string
	for name := range b.owners[id] {
		if name == c.EchoOf {
			continue
		}
		b.pending.AddChange(name, id, c)
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// nodeChanged makes every NodeTagSync's next pass full: a Node changed.
func (b *changeBook) nodeChanged() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.epoch++
}

// overflow makes every NodeTagSync's next pass full and fresh: changes
// were dropped. It returns the names of those indexed.
func (b *changeBook) overflow() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.epoch++
	var names []string
	for name := range b.placed {
		b.pending.Flag(name)
		names = append(names, name)
	}
	return names
}

// currentEpoch is the epoch a full pass starting now serves.
func (b *changeBook) currentEpoch() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.epoch
}

// take returns and forgets the resources changed for name, what their
// latest changes carried, and whether its next full pass must read fresh.
func (b *changeBook) take(name string) ([]string, map[string]kit.Carried, bool) {
	return b.pending.TakeCarried(name)
}

// restore puts back the changes of a failed pass for its retry; fresh
// makes that retry read fresh.
func (b *changeBook) restore(name string, ids []string, fresh bool) {
	b.pending.Restore(name, ids, fresh)
}

// record replaces name's placements in the index with a full pass's, which
// read the cloud at, or earlier (its reads may come from the provider's
// cache): a readAt later than the read only makes a carried change be read
// again, never taken for newer than it is.
func (b *changeBook) record(name string, placed map[string][]string, notes map[string]string, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unindex(name)
	b.placed[name], b.notes[name] = placed, notes
	for id := range placed {
		b.readLocked(id, at)
		if b.owners[id] == nil {
			b.owners[id] = map[string]bool{}
		}
		b.owners[id][name] = true
	}
}

// forget drops a deleted NodeTagSync.
func (b *changeBook) forget(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unindex(name)
	b.pending.Forget(name)
}

// unindex removes name from the index (the caller holds b.mu).
func (b *changeBook) unindex(name string) {
	for id := range b.placed[name] {
		delete(b.owners[id], name)
		if len(b.owners[id]) == 0 {
			delete(b.owners, id)
			delete(b.readAt, id)
		}
	}
	delete(b.placed, name)
	delete(b.notes, name)
}

// nodesOn returns the names of the nodes name's last full pass placed on
// the resources ids.
func (b *changeBook) nodesOn(name string, ids []string) map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]bool{}
	for _, id := range ids {
		for _, n := range b.placed[name][id] {
			out[n] = true
		}
	}
	return out
}

// Route implements cloudchange.Router: a change enqueues the NodeTagSyncs placed
// on its resource; a change of its run state alone (its tags did not
// change) does nothing.
func (r *Reconciler) Route(c cloudchange.Change) []string {
	if c.Kind == cloudchange.KindState {
		return nil
	}
	names := r.changes.route(c)
	r.subscriber.Enqueue(requests(names)...)
	return names
}

// Overflow implements cloudchange.Router: changes were dropped, so every
// NodeTagSync runs one full pass.
func (r *Reconciler) Overflow() {
	r.subscriber.Enqueue(requests(r.changes.overflow())...)
}

// requests are the reconcile requests of NodeTagSyncs by name.
func requests(names []string) []reconcile.Request {
	out := make([]reconcile.Request, len(names))
	for i, n := range names {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: n}}
	}
	return out
}
