package kit

import (
	"slices"
	"sync"
)

// Pending holds, per object (K), the resources changes named since its
// last pass started, and a flag saying its next pass must be full. A
// controller's Router adds to it, and a pass takes what is pending when it
// starts (and restores it when it could not run). It is safe for
// concurrent use; its zero value is ready.
type Pending[K comparable] struct {
	mu      sync.Mutex
	changed map[K]map[string]bool
	flagged map[K]bool
	// carried is what the latest change of each changed resource carried
	// (see AddChange).
	carried map[K]map[string]Carried
}

// Add records a change of resource (a canonical ID) for k; the next pass
// reads the resource (whatever an earlier change carried).
func (p *Pending[K]) Add(k K, resource string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(k, resource)
	delete(p.carried[k], resource)
}

// add is Add with p.mu held.
func (p *Pending[K]) add(k K, resource string) {
	if p.changed == nil {
		p.changed = map[K]map[string]bool{}
	}
	if p.changed[k] == nil {
		p.changed[k] = map[string]bool{}
	}
	p.changed[k][resource] = true
}

// Flag makes k's next pass full.
func (p *Pending[K]) Flag(k K) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.flagged == nil {
		p.flagged = map[K]bool{}
	}
	p.flagged[k] = true
}

// Take returns and forgets k's changed resources, sorted, and its flag.
func (p *Pending[K]) Take(k K) ([]string, bool) {
	ids, _, flagged := p.TakeCarried(k)
	return ids, flagged
}

// TakeCarried is Take that also returns what the latest changes of the
// resources carried, by resource (see AddChange).
func (p *Pending[K]) TakeCarried(k K) ([]string, map[string]Carried, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, 0, len(p.changed[k]))
	for id := range p.changed[k] {
		ids = append(ids, id)
	}
	flagged, carried := p.flagged[k], p.carried[k]
	delete(p.changed, k)
	delete(p.flagged, k)
	delete(p.carried, k)
	slices.Sort(ids)
	return ids, carried, flagged
}

// Restore puts back what Take returned, for the retry of a pass that
// could not run.
func (p *Pending[K]) Restore(k K, resources []string, flagged bool) {
	for _, id := range resources {
		p.Add(k, id)
	}
	if flagged {
		p.Flag(k)
	}
}

// Forget drops what is pending for a deleted object.
func (p *Pending[K]) Forget(k K) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.changed, k)
	delete(p.flagged, k)
	delete(p.carried, k)
}
