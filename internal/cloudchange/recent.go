package cloudchange

// recentIDs remembers the last n change IDs, to drop redeliveries. It is
// guarded by the Hub's mutex.
type recentIDs struct {
	ring  []string
	next  int
	count map[string]int
}

func newRecentIDs(n int) *recentIDs {
	return &recentIDs{ring: make([]string, n), count: map[string]int{}}
}

// seen reports whether id is among the recent IDs, and remembers it when
// it is not. An empty ID is never seen.
func (r *recentIDs) seen(id string) bool {
	if id == "" {
		return false
	}
	if r.count[id] > 0 {
		return true
	}
	if old := r.ring[r.next]; old != "" {
		if r.count[old]--; r.count[old] <= 0 {
			delete(r.count, old)
		}
	}
	r.ring[r.next] = id
	r.next = (r.next + 1) % len(r.ring)
	r.count[id]++
	return false
}

// forget drops ids, so their redelivery is taken again.
func (r *recentIDs) forget(ids []string) {
	for _, id := range ids {
		delete(r.count, id)
	}
}
