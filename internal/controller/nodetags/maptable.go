package nodetags

import (
	"hash/maphash"
	"maps"
	"slices"
	"sync"
)

// sharedLabels and sharedAnnotations are the tables TrimNode shares cached
// Nodes' label maps and base annotations through.
var (
	sharedLabels      = newMapTable(mapTableGeneration)
	sharedAnnotations = newMapTable(mapTableGeneration)
)

// mapTableGeneration is how many distinct maps a mapTable remembers per
// generation. A cluster's Nodes have a few label sets per pool and zone; a
// cluster whose Nodes all differ (instance tags synced per VM) costs the
// table at most two generations of maps that no Node uses any more.
const mapTableGeneration = 4096

// mapTable interns whole string maps: intern returns one shared map for all
// equal maps it is given, so many Nodes with the same labels hold one map.
//
// Its memory is bounded without reference counting: maps are remembered in
// two generations; when the current one is full it becomes the previous one
// and the oldest is forgotten (its maps live on while Nodes use them; an
// equal map interned later is then a new copy, shared from then on).
type mapTable struct {
	seed  maphash.Seed
	limit int

	mu        sync.Mutex
	cur, prev map[uint64]map[string]string
}

// newMapTable returns a table remembering up to limit maps per generation.
func newMapTable(limit int) *mapTable {
	return &mapTable{seed: maphash.MakeSeed(), limit: limit, cur: map[uint64]map[string]string{}}
}

// intern returns the table's map equal to m, adding a copy of m (with
// canonical strings) when it has none. The result must not be modified. An
// empty m is returned as is.
func (t *mapTable) intern(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	h := t.hash(m)
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.lookup(h); ok && maps.Equal(s, m) {
		return s
	}
	s := internMap(m)
	t.remember(h, s)
	return s
}

// lookup finds the map remembered under h, moving it into the current
// generation when it was in the previous one.
func (t *mapTable) lookup(h uint64) (map[string]string, bool) {
	if s, ok := t.cur[h]; ok {
		return s, true
	}
	s, ok := t.prev[h]
	if ok {
		t.remember(h, s)
	}
	return s, ok
}

// remember stores s under h, starting a new generation when the current one
// is full.
func (t *mapTable) remember(h uint64, s map[string]string) {
	if len(t.cur) >= t.limit {
		t.prev, t.cur = t.cur, make(map[uint64]map[string]string, t.limit)
	}
	t.cur[h] = s
}

// size returns how many maps the table remembers.
func (t *mapTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.cur) + len(t.prev)
}

// hash returns a hash of m's entries, independent of iteration order.
func (t *mapTable) hash(m map[string]string) uint64 {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var h maphash.Hash
	h.SetSeed(t.seed)
	for _, k := range keys {
		h.WriteString(k)
		h.WriteByte(0)
		h.WriteString(m[k])
		h.WriteByte(0)
	}
	return h.Sum64()
}
