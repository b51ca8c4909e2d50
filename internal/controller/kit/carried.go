package kit

import (
	"maps"
	"time"

	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/tags"
)

// Carried is what the latest change of a resource told of its tags.
type Carried struct {
	// ID is the resource as the change named it
	// (cloudchange.Change.Resource).
	ID string
	// Tags are the resource's whole tag set after the change (nil: the
	// change carried none, or changes of the same time disagree, so a pass
	// reads the resource).
	Tags tags.Set
	// Time is when the cloud made the change.
	Time time.Time
	// Received is when the hub took the resource's latest-received change
	// (cloudchange.Change.Received): a read sent since shows every change
	// of the resource taken so far (cloud.WithReadAfter).
	Received time.Time
	// Writer is who made the resource's changes since the last pass took
	// them, when every one of their events named the same writer (zero
	// when one named none, or two named different writers): a person's
	// change must not vouch for a platform's made in the same window.
	Writer cloudchange.Writer
	// Named is the writer the latest-received change that named one
	// named, even when other changes of the window named none (an echo of
	// a write that added tags names no one on AWS): who a stopped fight's
	// other side is. Unlike Writer it vouches for nothing.
	Named string
}

// Usable reports whether a pass may use the carried tags as the
// resource's instead of reading it: the change carried them and happened
// after readAt, the time of the last read (or write) of the resource the
// pass knows of. A change as old as the read or older may predate it.
func (c Carried) Usable(readAt time.Time) bool {
	return c.Tags != nil && c.Time.After(readAt)
}

// AddChange records c, a change of resource (a canonical ID) for k, as Add
// does, and keeps what the latest change of the resource (by
// cloudchange.Change.Time) carried. A change that carries no tags makes the
// resource one to read, unless a later change carries them; two changes of
// the same time that carry different tags do too (which came last is
// unknown).
func (p *Pending[K]) AddChange(k K, resource string, c cloudchange.Change) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(k, resource)
	if p.carried == nil {
		p.carried = map[K]map[string]Carried{}
	}
	if p.carried[k] == nil {
		p.carried[k] = map[string]Carried{}
	}
	last, ok := p.carried[k][resource]
	next := last
	switch {
	case !ok || c.Time.After(last.Time):
		next = Carried{ID: c.Resource, Tags: c.Tags, Time: c.Time, Writer: last.Writer, Named: last.Named}
	case c.Time.Equal(last.Time) && (c.Tags == nil || !maps.Equal(c.Tags, last.Tags)):
		next.Tags = nil
	}
	switch {
	case !ok:
		next.Writer = c.Writer
	case c.Writer != last.Writer:
		next.Writer = cloudchange.Writer{}
	}
	if c.Writer.ID != "" {
		next.Named = c.Writer.ID
	}
	next.Received = latest(last.Received, c.Received)
	p.carried[k][resource] = next
}

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
