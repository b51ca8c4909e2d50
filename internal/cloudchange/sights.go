package cloudchange

import (
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// What a controller's full passes saw of each resource, to find the
// changes no event announced (silence.go): each full pass tells the
// subscription the tags it read (Subscription.Saw); a resource whose tags
// differ from the previous full pass's, without a change of it routed
// since, is a candidate, confirmed when no change of it arrives within
// SilentAfter either (its event may be on its way).
//
// A pass may read a resource behind the cloud (Resource Graph indexes
// after the write, a provider's cache): a change announced shortly before
// the previous full pass read the resource counts too (announceSlack), and
// a full pass that reads what the previous one read does not move the
// previous one's time.

// announceSlack is how long before a full pass's read a change may have
// been announced and still account for what the next full pass finds: the
// indexing delay of a search (Resource Graph: seconds to minutes).
const announceSlack = 5 * time.Minute

// maxSights bounds the resources a subscription remembers; past it a new
// resource is not judged.
const maxSights = 200000

// sights is what a subscription's full passes saw. Safe for concurrent
// use; its zero value is ready.
type sights struct {
	mu         sync.Mutex
	seen       map[string]*sight // by canonical ID
	candidates map[string]candidate
}

// sight is a resource as full passes last saw it: its cloud, its tags'
// digest, since when (less announceSlack) they read so, and when a change
// of it was last announced.
type sight struct {
	cloud     string
	digest    uint64
	since     time.Time
	announced time.Time
}

// candidate is a change a full pass found at at, of a resource that read
// otherwise since since, that no event announced yet.
type candidate struct {
	cloud, id string
	since, at time.Time
}

// saw records that a full pass read resource (of cloudName) with tags t at
// at.
func (s *sights) saw(cloudName, resource string, t tags.Set, at time.Time) {
	id, d := cloud.CanonicalID(resource), digest(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen, s.candidates = map[string]*sight{}, map[string]candidate{}
	}
	prev := s.seen[id]
	switch {
	case prev == nil:
		if len(s.seen) < maxSights {
			s.seen[id] = &sight{cloud: cloudName, digest: d, since: at.Add(-announceSlack)}
		}
		return
	case prev.digest == d:
		return
	case !prev.announced.After(prev.since):
		s.candidates[id] = candidate{cloud: cloudName, id: id, since: prev.since, at: at}
	}
	// The announcement accounts for this change; the next one needs its own.
	prev.digest, prev.since, prev.announced = d, at.Add(-announceSlack), time.Time{}
}

// announced records that a change of the resource id (canonical) was
// routed at at: it accounts for what the next full pass finds.
func (s *sights) announced(id string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.candidates[id]; ok && at.After(c.since) {
		delete(s.candidates, id) // the late event of the change found: it accounts for that one only
		return
	}
	if p := s.seen[id]; p != nil {
		p.announced = at
	}
}

// confirmed returns, and forgets, the candidates found at least grace
// before now: no event announced them meanwhile.
func (s *sights) confirmed(now time.Time, grace time.Duration) []candidate {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []candidate
	for id, c := range s.candidates {
		if now.Sub(c.at) >= grace {
			out = append(out, c)
			delete(s.candidates, id)
		}
	}
	slices.SortFunc(out, func(a, b candidate) int { return a.at.Compare(b.at) })
	return out
}

// reset forgets every sight: changes were dropped (an overflow) or the
// sources' health changed, so the next full pass cannot judge.
func (s *sights) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen, s.candidates = nil, nil
}

// digest identifies a tag set.
func digest(t tags.Set) uint64 {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := fnv.New64a()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(t[k]))
		h.Write([]byte{0})
	}
	return h.Sum64()
}
