package armsim

import (
	"sync"
	"time"
)

// DefaultGraphIndexDelay is how long Resource Graph takes, in armsim, to
// show a tag change: Resource Graph is an index that ARM's change
// notifications update asynchronously ("ARG is near real-time, it follows
// an eventual consistent model ... It lags behind the source of truth by a
// brief period, occasionally longer",
// https://learn.microsoft.com/en-us/azure/governance/resource-graph/choose-query-strategy),
// and Microsoft's figure for it is "95% of all changes to be present in
// resource graph under 30s" with no upper bound
// (https://github.com/Azure/azure-dev/issues/540). Five seconds is a
// typical lag, not the tail; a test of the tail sets 30 s
// (Options.GraphIndexDelay, Server.SetGraphIndexDelay).
const DefaultGraphIndexDelay = 5 * time.Second

// graphLag is Resource Graph's indexing delay: a query sees the tags of a
// resource, resource group or subscription as they were delay ago. Tag
// writes (the Tags API, a compute PATCH, an out-of-band edit) record the
// tags they replaced; resources created or deleted are seen at once.
type graphLag struct {
	mu    sync.Mutex
	delay time.Duration
	// before are, per tag set (the address of an object's, group's or
	// subscription's tags field), the tags it had before each of its writes
	// within the delay, oldest first.
	before  map[*tagSet][]tagVersion
	records int
}

// tagVersion is a tag set as it was until a write at at.
type tagVersion struct {
	at   time.Time
	tags tagSet
}

// SetGraphIndexDelay sets how long Resource Graph takes to show a tag
// change from now on (0: at once). Options.GraphIndexDelay sets the
// initial one.
func (s *Server) SetGraphIndexDelay(d time.Duration) {
	s.lag.mu.Lock()
	defer s.lag.mu.Unlock()
	s.lag.delay = max(d, 0)
	if d <= 0 {
		s.lag.before = nil
	}
}

// GraphIndexDelay returns the indexing delay in force.
func (s *Server) GraphIndexDelay() time.Duration {
	s.lag.mu.Lock()
	defer s.lag.mu.Unlock()
	return s.lag.delay
}

// retagged records that the tags at p, which were old, were replaced now.
// The caller holds the store's write lock and must not change old after.
func (s *Server) retagged(p *tagSet, old tagSet) {
	l := &s.lag
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.delay <= 0 {
		return
	}
	now := s.opts.Clock.Now()
	if l.before == nil {
		l.before = map[*tagSet][]tagVersion{}
	}
	if l.records++; l.records%1024 == 0 {
		for q := range l.before {
			l.prune(q, now)
		}
	}
	l.before[p] = append(l.before[p], tagVersion{at: now, tags: old})
}

// indexed returns what Resource Graph shows now of the tags at p, which
// are cur, and whether that differs from cur. The caller holds the
// store's lock.
func (s *Server) indexed(p *tagSet, cur tagSet) (tagSet, bool) {
	l := &s.lag
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.before) == 0 {
		return cur, false
	}
	l.prune(p, s.opts.Clock.Now())
	if v := l.before[p]; len(v) > 0 {
		return v[0].tags, true
	}
	return cur, false
}

// prune forgets the versions of p that the index has caught up with (l.mu
// held).
func (l *graphLag) prune(p *tagSet, now time.Time) {
	v := l.before[p]
	cutoff := now.Add(-l.delay)
	for len(v) > 0 && !v[0].at.After(cutoff) {
		v = v[1:]
	}
	if len(v) == 0 {
		delete(l.before, p)
		return
	}
	l.before[p] = v
}

// GraphShows reports whether Resource Graph shows the latest tags of the
// resource, resource group or subscription id: no tag write of it waits
// for the indexing delay. A test that seeds tags with a write, as if they
// had been there long before, waits for it.
func (s *Server) GraphShows(id string) (bool, error) {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	t, e := s.st.resolveScope(id)
	if e != nil {
		return false, e
	}
	_, lagging := s.indexed(t.tags, *t.tags)
	return !lagging, nil
}
